// The Vercel AI SDK tools, driven the way the SDK drives them: `generateText` with the `ai`
// package's mock language model (no model, no network to one) calling `remember`,
// `searchMemories` and `recall`, which run against the live kindmem.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { generateText, stepCountIs } from 'ai';
import { kindmemTools } from 'kindmem-client/ai';

import { scriptedModel } from './scripted-model.js';
import { live, mint, person } from './support.js';

function toolsFor(agent: Awaited<ReturnType<typeof mint>>['agent']) {
  return kindmemTools(agent, { agentId: live().agent, memoryTypes: ['preference', 'note'] });
}

describe('AI SDK tools', () => {
  test('the model remembers through the tool; the tool call id is kindmem’s, so a re-run replays', async () => {
    const { agent } = await mint(person('cust'));
    const tools = toolsFor(agent);
    const script = [
      {
        tool: 'remember',
        id: 'call-7',
        input: { type: 'preference', text: 'Prefers email', key: 'channel' },
      },
      { text: 'Noted.' },
    ];
    const model = scriptedModel(script);
    // when generateText runs the model's tool call
    const result = await generateText({
      model,
      tools,
      stopWhen: stepCountIs(3),
      prompt: 'Email me, please.',
    });
    // then the tool ran, its output went back to the model, and kindmem holds the memory
    assert.equal(result.text, 'Noted.');
    const [toolResult] = result.steps[0]?.toolResults ?? [];
    assert.equal(toolResult?.toolName, 'remember');
    const output = toolResult?.output as {
      outcome: string;
      memory: { memory_id: string; content: unknown };
    };
    assert.equal(output.outcome, 'created');
    assert.deepEqual(output.memory.content, { text: 'Prefers email', key: 'channel' });
    const secondPrompt = JSON.stringify(model.doGenerateCalls[1]?.prompt);
    assert.match(secondPrompt, new RegExp(output.memory.memory_id));
    const facts = [];
    for await (const fact of agent.iterFacts({ type: 'preference' })) facts.push(fact.content);
    assert.deepEqual(facts, [{ text: 'Prefers email', key: 'channel' }]);
    // and the same step run again (the same tool call id) answers the first memory
    const again = await generateText({
      model: scriptedModel(script),
      tools,
      stopWhen: stepCountIs(3),
      prompt: 'Email me, please.',
    });
    const replay = again.steps[0]?.toolResults[0]?.output as {
      outcome: string;
      memory: { memory_id: string };
    };
    assert.deepEqual(
      [replay.outcome, replay.memory.memory_id],
      ['replayed', output.memory.memory_id],
    );
  });

  test('the model searches memories and recalls conversations, within the run’s readers', async () => {
    const participant = person('cust');
    const { agent } = await mint(participant);
    await agent.remember({ type: 'preference', text: 'Allergic to peanuts', tool_call_id: 'c-1' });
    await agent.appendMessages(`${participant}-thread`, {
      messages: [{ role: 'user', text: 'Do you ship to Lisbon?' }],
    });
    const stranger = await mint(person('other'));
    await stranger.agent.remember({
      type: 'preference',
      text: 'Allergic to peanuts and shellfish',
      tool_call_id: 'c-1',
    });
    const model = scriptedModel([
      { tool: 'searchMemories', input: { query: 'peanuts', mode: 'keyword' } },
      { tool: 'recall', input: { mode: 'keyword', query: 'Lisbon' } },
      { text: 'Done.' },
    ]);
    const result = await generateText({
      model,
      tools: toolsFor(agent),
      stopWhen: stepCountIs(4),
      prompt: 'What do we know?',
    });
    const outputs = result.steps.flatMap((step) =>
      step.toolResults.map((r) => [r.toolName, r.output] as const),
    );
    const search = outputs[0]?.[1] as { hits: { content: unknown; score: number }[] };
    const recall = outputs[1]?.[1] as { hits: { text: string; conversation_id: string }[] };
    assert.deepEqual(
      search.hits.map((h) => h.content),
      [{ text: 'Allergic to peanuts' }],
    );
    assert.deepEqual(
      recall.hits.map((h) => [h.text, h.conversation_id]),
      [['Do you ship to Lisbon?', `${participant}-thread`]],
    );
  });

  test('the input schema refuses what the model must not choose; kindmem’s refusal reaches the model', async () => {
    const participant = person('gone');
    const { agent } = await mint(participant);
    const tools = toolsFor(agent);
    // a type the agent does not declare is refused by the tool's zod schema, before any request
    const model = scriptedModel([
      { tool: 'remember', input: { type: 'password', text: 'hunter2' } },
      { text: 'Sorry.' },
    ]);
    const refused = await generateText({
      model,
      tools,
      stopWhen: stepCountIs(3),
      prompt: 'Remember my password.',
    });
    const errors = refused.steps[0]?.content.filter((part) => part.type === 'tool-error') ?? [];
    assert.equal(errors.length, 1);
    const facts = [];
    for await (const fact of agent.iterFacts()) facts.push(fact);
    assert.deepEqual(facts, []);
    // and kindmem's own error (an erasure holding the person) comes back as the tool's error
    const { adminClient } = await import('./support.js');
    await adminClient().startErasure({
      target_kind: 'participant',
      target_id: participant,
      reason: 'asked',
    });
    const held = await generateText({
      model: scriptedModel([
        { tool: 'remember', input: { type: 'note', text: 'x' } },
        { text: 'Sorry.' },
      ]),
      tools,
      stopWhen: stepCountIs(3),
      prompt: 'Note this.',
    });
    const [error] = held.steps[0]?.content.filter((part) => part.type === 'tool-error') ?? [];
    assert.ok(error && error.type === 'tool-error');
    assert.equal((error.error as { code?: string }).code, 'erasure-in-progress');
    assert.match(JSON.stringify(held.response.messages), /erasure for this person is in progress/);
  });
});
