// The seed's guards (`isReadableBy`, `isRecallReadableBy`, from its readers.ts and recall.ts),
// and the readers a caller hands the binding as kindmem's narrowing of a read.
//
// kindmem applies the credential's readers in SQL, before any limit, on every read. Readers a
// caller hands the binding are sent with the read (`readers`): kindmem returns what both they
// and the credential's may read, guarded in the same query before its limit, so a narrower
// reader gets its whole top k, and a set reaching past the credential is intersected with it,
// never widened. The guards here are the seed's, for code that checks a scope itself.

import type {
  MemoryReaders,
  MemoryScope,
  OrgId,
  ProjectId,
  RecallRow,
  ThreadId,
  UserId,
} from './seed.js';
import type { Readers, ReadersInput } from '../types.js';

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

/** A canonical UUID as kindmem spells its ids (lower case). */
const KINDMEM_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** kindmem's longest participant or thread id. */
const MAX_ID = 200;

/**
 * The readers a call is handed, as kindmem's narrowing (`readers` of a search, a list, a
 * recall), or `undefined` when they narrow nothing: `all`, or the credential's own. Ids that no
 * kindmem container can have (a project, org or user id that is not a lower-case UUID, a
 * participant or thread id longer than kindmem keeps) are left out: the seed compares ids as
 * strings, so they could match nothing here anyway.
 */
export function narrowing(
  given: MemoryReaders,
  credential: MemoryReaders,
): ReadersInput | undefined {
  if (given.all === true || sameReaders(given, credential)) return undefined;
  const uuids = (ids: readonly string[] | undefined) =>
    [...new Set(ids ?? [])].filter((id) => KINDMEM_UUID.test(id));
  const texts = (ids: readonly string[] | undefined) =>
    [...new Set(ids ?? [])].filter((id) => id.length <= MAX_ID);
  return {
    project_ids: uuids(given.projectIds),
    org_ids: uuids(given.orgIds),
    user_ids: uuids(given.userIds),
    participant_ids: texts(given.participantIds),
    thread_ids: texts(given.threadIds),
    on_behalf_of_project_ids: uuids(given.onBehalfOfProjectIds),
  };
}

/** Whether two sets of readers grant exactly the same, field by field. */
function sameReaders(a: MemoryReaders, b: MemoryReaders): boolean {
  if ((a.all === true) !== (b.all === true)) return false;
  if (a.all === true) return true;
  const same = (x: readonly string[] | undefined, y: readonly string[] | undefined) => {
    const left = new Set(x ?? []);
    const right = new Set(y ?? []);
    return left.size === right.size && [...left].every((id) => right.has(id));
  };
  return (
    same(a.projectIds, b.projectIds) &&
    same(a.orgIds, b.orgIds) &&
    same(a.userIds, b.userIds) &&
    same(a.participantIds, b.participantIds) &&
    same(a.threadIds, b.threadIds) &&
    same(a.onBehalfOfProjectIds, b.onBehalfOfProjectIds)
  );
}
