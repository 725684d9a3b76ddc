// The package's copy of the seed's declarations (kindmem-client/memory) against the seed's own
// (test/fixtures/kindgi, resolved as `@kindgi/memory`): each pair must be the same type both
// ways, so a declaration that drifts from the seed fails `tsc` before any test runs. And the
// seed's guards, as the binding applies them on top of kindmem's, case by case.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type * as seed from '@kindgi/memory';
import type * as seedTypes from '@kindgi/types';
import * as memory from 'kindmem-client/memory';

/** `true` only when each of A and B is assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;

export type Drift = [
  Holds<Same<memory.MemoryQueryBinding, seed.MemoryQueryBinding>>,
  Holds<Same<memory.MemoryRememberBinding, seed.MemoryRememberBinding>>,
  Holds<
    Same<memory.Result<string, memory.MemoryError>, seedTypes.Result<string, seed.MemoryError>>
  >,
  Holds<Same<memory.MemoryError, seed.MemoryError>>,
  Holds<Same<memory.MemoryError['code'], seed.MemoryError['code']>>,
  Holds<Same<memory.ErasureInProgressError, seed.ErasureInProgressError>>,
  Holds<Same<memory.PersistenceError, seed.PersistenceError>>,
  Holds<Same<memory.Fact<{ text: string }>, seed.Fact<{ text: string }>>>,
  Holds<Same<memory.RetrievalHit, seed.RetrievalHit>>,
  Holds<Same<memory.RecallHit, seed.RecallHit>>,
  Holds<Same<memory.Fused<memory.Fact>, seed.Fused<seed.Fact>>>,
  Holds<Same<memory.LogEntry, seed.LogEntry>>,
  Holds<Same<memory.LogKind, seed.LogKind>>,
  Holds<Same<memory.MemoryReaders, seed.MemoryReaders>>,
  Holds<Same<memory.ListFactsInput, seed.ListFactsInput>>,
  Holds<Same<memory.SearchBySemanticInput, seed.SearchBySemanticInput>>,
  Holds<Same<memory.SearchConversationsInput, seed.SearchConversationsInput>>,
  Holds<Same<memory.AppendLogInput, seed.AppendLogInput>>,
  Holds<Same<memory.ReadLogInput, seed.ReadLogInput>>,
  Holds<Same<memory.RememberFactInput, seed.RememberFactInput>>,
  Holds<Same<memory.RememberFactResult, seed.RememberFactResult>>,
];

// and the binding is one, by the seed's own interfaces
export const bindingIsTheSeeds = (
  m: memory.KindmemMemory,
): seed.MemoryQueryBinding & seed.MemoryRememberBinding => m;

const P = 'p-1' as seedTypes.ProjectId;
const T = 't' as seedTypes.TenantId;

describe("the seed's guards", () => {
  test('isReadableBy: each container a scope names must be one the readers have', () => {
    const run: seed.MemoryReaders = {
      projectIds: [P],
      participantIds: ['cust'],
      threadIds: ['th' as seedTypes.ThreadId],
    };
    const cases: [seed.MemoryScope, boolean][] = [
      [{ tenantId: T }, true],
      [{ tenantId: T, projectId: P }, true],
      [{ tenantId: T, projectId: P, participantId: 'cust' }, true],
      [{ tenantId: T, projectId: P, participantId: 'other' }, false],
      [{ tenantId: T, projectId: 'p-2' as seedTypes.ProjectId }, false],
      [{ tenantId: T, projectId: P, threadId: 'th' as seedTypes.ThreadId }, true],
      [{ tenantId: T, userId: 'u' as seedTypes.UserId }, false],
      [{ tenantId: T, orgId: 'o' as seedTypes.OrgId }, false],
    ];
    for (const [scope, readable] of cases)
      assert.equal(memory.isReadableBy(scope, run), readable, JSON.stringify(scope));
    assert.equal(
      memory.isReadableBy(
        { tenantId: T, projectId: P, participantId: 'x' },
        { onBehalfOfProjectIds: [P] },
      ),
      true,
    );
    assert.equal(memory.isReadableBy({ tenantId: T, projectId: P }, {}), false);
  });

  test("isRecallReadableBy: a conversation is someone's, stricter than facts'", () => {
    const run: seed.MemoryReaders = {
      projectIds: [P],
      participantIds: ['cust'],
      threadIds: ['conv-1' as seedTypes.ThreadId],
    };
    assert.equal(
      memory.isRecallReadableBy({ conversationId: 'c', projectId: P, participantId: 'cust' }, run),
      true,
    );
    assert.equal(
      memory.isRecallReadableBy({ conversationId: 'c', projectId: P, participantId: 'other' }, run),
      false,
    );
    assert.equal(memory.isRecallReadableBy({ conversationId: 'conv-1', projectId: P }, run), true);
    assert.equal(memory.isRecallReadableBy({ conversationId: 'c', projectId: P }, run), false);
    assert.equal(
      memory.isRecallReadableBy(
        { conversationId: 'c', projectId: P, participantId: 'x' },
        { onBehalfOfProjectIds: [P] },
      ),
      true,
    );
  });

  test("the seed's thirteen log kinds", () => {
    assert.equal(memory.LOG_KINDS.length, 13);
    assert.ok(memory.LOG_KINDS.includes('tool-call'));
  });
});
