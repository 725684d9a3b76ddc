// A program written against the seed's interfaces only: one agent turn as `@kindgi/memory`'s
// README would have it, importing nothing but `@kindgi/memory` and `@kindgi/types` (the test
// checks). It does not know what stores its memory; seed-program.test.ts runs it on kindmem,
// constructing `KindmemMemory` where another host constructs its own binding.

import type {
  Fact,
  MemoryQueryBinding,
  MemoryReaders,
  MemoryRememberBinding,
  MemoryScope,
  RecallHit,
} from '@kindgi/memory';
import type { RunId, TenantId } from '@kindgi/types';

export interface TurnContext {
  readonly tenantId: TenantId;
  readonly runId: RunId;
  readonly scope: MemoryScope;
  readonly readers: MemoryReaders;
  readonly agent: { readonly id: string; readonly version: string };
  readonly participantId: string;
  readonly userMessage: string;
  readonly toolCallId: string;
}

export interface TurnReport {
  readonly known: readonly unknown[];
  readonly matched: readonly unknown[];
  readonly recalled: readonly string[];
  readonly remembered: string;
  readonly rememberedAgain: string;
  readonly chained: boolean;
  readonly journal: readonly string[];
  readonly failure?: string;
}

type Memory = MemoryQueryBinding & MemoryRememberBinding;

export async function agentTurn(memory: Memory, turn: TurnContext): Promise<TurnReport> {
  const { tenantId, runId, scope, readers } = turn;
  const report = (failure: string): TurnReport => ({
    known: [],
    matched: [],
    recalled: [],
    remembered: '',
    rememberedAgain: '',
    chained: false,
    journal: [],
    failure,
  });

  // journal what the user said
  const said = await memory.appendLog({
    tenantId,
    runId,
    kind: 'user-message',
    scope,
    actor: 'user',
    payload: { text: turn.userMessage },
  });
  if (said.kind === 'err') return report(said.error.code);

  // what is known about them, and what matches their words
  const known = await memory.listFacts<{ text: string }>({
    tenantId,
    readers,
    type: 'preference',
    limit: 10,
  });
  if (known.kind === 'err') return report(known.error.code);
  const matched = await memory.searchByKeyword<{ text: string }>({
    tenantId,
    readers,
    query: turn.userMessage,
    topK: 3,
  });
  if (matched.kind === 'err') return report(matched.error.code);
  let recalled: readonly RecallHit[] = [];
  if (memory.searchConversations) {
    const found = await memory.searchConversations({
      tenantId,
      readers,
      selections: [{ agentId: turn.agent.id }],
      mode: 'keyword',
      query: turn.userMessage,
      topK: 3,
    });
    if (found.kind === 'err') return report(found.error.code);
    recalled = found.value;
  }
  await memory.appendLog({
    tenantId,
    runId,
    kind: 'retrieval',
    scope,
    causedByLogId: said.value.id,
    payload: {
      facts: known.value.map((fact: Fact<{ text: string }>) => fact.id),
      hits: matched.value.length,
    },
  });

  // the model's remember tool call, and the same step run again after a crash
  const call = {
    tenantId,
    scope,
    type: 'preference',
    content: { text: 'Wants replies by email', key: 'channel' },
    subjects: [{ kind: 'participant' as const, id: turn.participantId }],
    agent: turn.agent,
    generatedBy: { runId, toolCallId: turn.toolCallId },
    keepDays: 90,
  };
  const remembered = await memory.remember(call);
  if (remembered.kind === 'err') return report(remembered.error.code);
  const again = await memory.remember(call);
  if (again.kind === 'err') return report(again.error.code);
  await memory.appendLog({
    tenantId,
    runId,
    kind: 'agent-message',
    scope,
    actor: 'agent',
    payload: { text: 'Noted.' },
  });

  // the journal, and whether its chain holds
  const log = await memory.readLog({ tenantId, runId });
  if (log.kind === 'err') return report(log.error.code);
  const chained = log.value.every(
    (entry, i) =>
      entry.sequence === i + 1 && (i === 0 || entry.prevHash === log.value[i - 1]?.entryHash),
  );
  return {
    known: known.value.map((fact) => fact.content?.text),
    matched: matched.value.map((hit) => hit.fact.content?.text),
    recalled: recalled.map((hit) => hit.message.text),
    remembered: remembered.value.outcome,
    rememberedAgain: again.value.outcome,
    chained,
    journal: log.value.map((entry) => entry.kind),
  };
}
