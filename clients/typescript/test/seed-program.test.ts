// The "done when": a program written against the seed's `MemoryQueryBinding` and
// `MemoryRememberBinding` (seed-program.ts) runs against kindmem with only the binding's
// construction changed.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import type { MemoryQueryBinding, MemoryRememberBinding } from '@kindgi/memory';
import type { RunId } from '@kindgi/types';
import { KindmemMemory } from 'kindmem-client/memory';

import { agentTurn } from './seed-program.js';
import { appClient, live, mint, person } from './support.js';

const here = dirname(fileURLToPath(import.meta.url));

test('the program imports nothing of kindmem: only the seed', () => {
  const source = readFileSync(join(here, '..', '..', 'test', 'seed-program.ts'), 'utf8');
  const imported = [...source.matchAll(/from '([^']+)'/g)].map((m) => m[1]);
  assert.deepEqual(imported, ['@kindgi/memory', '@kindgi/types']);
});

test("the seed's program runs on kindmem, the binding's construction its one change", async () => {
  // given an end user who told an earlier conversation about a parcel, and a preference on file
  const participant = person('cust');
  const { run, agent } = await mint(participant);
  await agent.appendMessages(`${participant}-thread`, {
    messages: [{ role: 'user', text: 'My parcel is late' }],
  });
  await appClient().createFact({
    type: 'preference',
    content: { text: 'Prefers short answers about the parcel' },
    scope: { project_id: live().project, participant_id: participant },
  });

  // when the program runs one turn with kindmem as its memory
  const memory: MemoryQueryBinding & MemoryRememberBinding = new KindmemMemory(agent);
  const tenantId = await (memory as KindmemMemory).tenantId();
  const report = await agentTurn(memory, {
    tenantId,
    runId: run.id as RunId,
    scope: { tenantId },
    readers: await (memory as KindmemMemory).readers(),
    agent: { id: run.agent_id, version: run.agent_version },
    participantId: participant,
    userMessage: 'Where is my parcel?',
    toolCallId: 'call-1',
  });

  // then it read, recalled, remembered once, and journalled a chain that holds
  assert.deepEqual(report, {
    known: ['Prefers short answers about the parcel'],
    matched: ['Prefers short answers about the parcel'],
    recalled: ['My parcel is late'],
    remembered: 'created',
    rememberedAgain: 'replayed',
    chained: true,
    journal: ['user-message', 'retrieval', 'agent-message'],
  });
  assert.equal((await agent.verifyLog(run.id)).ok, true);
});
