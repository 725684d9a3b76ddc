// The seed's guards (`isReadableBy`, `isRecallReadableBy`, from its readers.ts and recall.ts),
// and how the readers a caller hands the binding compare with its credential's.
//
// kindmem applies the credential's readers in SQL, before any limit, on every read. The binding
// never sends readers (kindmem would not take them: readers come from the credential): it
// compares the ones it is handed with the credential's (`GET /v1/me`) and refuses a set that
// reaches further. A narrower set (a missing field grants nothing; no readers at all, only
// tenant-wide facts) is applied by the binding with these guards, on what kindmem answered.

import type {
  MemoryReaders,
  MemoryScope,
  OrgId,
  ProjectId,
  RecallRow,
  ThreadId,
  UserId,
} from './seed.js';
import type { Readers } from '../types.js';

/** The seed's scope guard (its readers.ts), case for case. */
export function isReadableBy(scope: MemoryScope, readers: MemoryReaders): boolean {
  if (readers.all === true) return true;
  const project = scope.projectId;
  const has = <T>(ids: readonly T[] | undefined, id: T) => ids?.includes(id) === true;
  const onBehalf = project !== undefined && has(readers.onBehalfOfProjectIds, project);
  if (project !== undefined && !(has(readers.projectIds, project) || onBehalf)) return false;
  if (project === undefined && scope.orgId !== undefined && !has(readers.orgIds, scope.orgId)) {
    return false;
  }
  if (scope.userId !== undefined && !has(readers.userIds, scope.userId)) return false;
  if (
    scope.participantId !== undefined &&
    !(has(readers.participantIds, scope.participantId) || onBehalf)
  ) {
    return false;
  }
  if (scope.threadId !== undefined && !(has(readers.threadIds, scope.threadId) || onBehalf)) {
    return false;
  }
  return true;
}

/** The seed's recall guard (its recall.ts), case for case. */
export function isRecallReadableBy(row: RecallRow, readers: MemoryReaders): boolean {
  if (readers.all === true) return true;
  const has = <T>(ids: readonly T[] | undefined, id: T | undefined) =>
    id !== undefined && ids?.includes(id) === true;
  const project = row.projectId;
  const onBehalf = has(readers.onBehalfOfProjectIds as readonly string[] | undefined, project);
  if (
    project !== undefined &&
    !(has(readers.projectIds as readonly string[] | undefined, project) || onBehalf)
  ) {
    return false;
  }
  const isPerson =
    row.participantId !== undefined
      ? has(readers.participantIds, row.participantId)
      : has(readers.userIds as readonly string[] | undefined, row.userId);
  return (
    isPerson ||
    has(readers.threadIds as readonly string[] | undefined, row.conversationId) ||
    onBehalf
  );
}

/** kindmem's readers (`GET /v1/me`) in the seed's shape. */
export function seedReaders(readers: Readers): MemoryReaders {
  if (readers.all) return { all: true };
  // kindmem's ids are the seed's branded ids: the same strings
  return {
    projectIds: readers.project_ids as readonly string[] as readonly ProjectId[],
    orgIds: readers.org_ids as readonly string[] as readonly OrgId[],
    userIds: readers.user_ids as readonly string[] as readonly UserId[],
    participantIds: readers.participant_ids,
    threadIds: readers.thread_ids as readonly string[] as readonly ThreadId[],
    onBehalfOfProjectIds:
      readers.on_behalf_of_project_ids as readonly string[] as readonly ProjectId[],
  };
}

/**
 * What `given` grants that `credential` does not, one line per grant (`[]`: nothing). Field by
 * field, conservatively: a project the credential reads for all of its end users
 * (`onBehalfOfProjectIds`) covers the same project among `projectIds`; nothing else stands in
 * for another field, so a set reported within never reads a fact (or recalls a message) the
 * credential could not, by either guard.
 */
export function readersBeyond(given: MemoryReaders, credential: MemoryReaders): string[] {
  if (credential.all === true) return [];
  if (given.all === true) return ['all'];
  const beyond: string[] = [];
  const check = (
    field: keyof MemoryReaders,
    ids: readonly string[] | undefined,
    allowed: readonly string[],
  ) => {
    for (const id of ids ?? []) if (!allowed.includes(id)) beyond.push(`${field}: ${id}`);
  };
  const onBehalf = (credential.onBehalfOfProjectIds ?? []) as readonly string[];
  check('projectIds', given.projectIds, [
    ...((credential.projectIds ?? []) as readonly string[]),
    ...onBehalf,
  ]);
  check('orgIds', given.orgIds, (credential.orgIds ?? []) as readonly string[]);
  check('userIds', given.userIds, (credential.userIds ?? []) as readonly string[]);
  check('participantIds', given.participantIds, credential.participantIds ?? []);
  check('threadIds', given.threadIds, (credential.threadIds ?? []) as readonly string[]);
  check('onBehalfOfProjectIds', given.onBehalfOfProjectIds, onBehalf);
  return beyond;
}

/** Whether `given` grants exactly what `credential` does (then kindmem's guard is the one). */
export function sameReaders(given: MemoryReaders, credential: MemoryReaders): boolean {
  return (
    readersBeyond(given, credential).length === 0 && readersBeyond(credential, given).length === 0
  );
}
