// kindmem-client/memory: the seed's bindings (`@kindgi/memory`'s `MemoryQueryBinding` and
// `MemoryRememberBinding`) over kindmem, and the seed's declarations they implement.

export { KindmemMemory, type KindmemMemoryOptions, type SearchHybridInput } from './binding.js';
export { isReadableBy, isRecallReadableBy } from './guards.js';
export { ENVELOPE } from './mapping.js';
export * from './seed.js';
