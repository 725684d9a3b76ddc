// The client against a live kindmem: held to the served schema (a method for every route, a
// class for every error code), and an agent's calls over the network, each answer typed.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  CODES,
  Conflict,
  ErasureInProgress,
  FactNotFound,
  Forbidden,
  ITERATORS,
  KindmemClient,
  OPERATIONS,
  Unauthenticated,
  ValidationError,
} from 'kindmem-client';

import { adminClient, appClient, live, mint, person } from './support.js';

describe('held to the served schema', () => {
  test('every route of /v1/schema has a client method, and the table names none that is gone', async () => {
    // given every operation the API serves
    const response = await fetch(`${live().url}/v1/schema?format=json`);
    const schema = (await response.json()) as { paths: Record<string, Record<string, unknown>> };
    const served = Object.entries(schema.paths).flatMap(([path, operations]) =>
      Object.keys(operations)
        .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    // then the client's table names each one, and nothing the API lacks
    assert.deepEqual(
      served.filter((route) => !(route in OPERATIONS)),
      [],
      'routes the client lacks',
    );
    assert.deepEqual(
      Object.keys(OPERATIONS).filter((route) => !served.includes(route)),
      [],
      'gone',
    );
    // and the client has each method, and an iterator for each paged list
    const client = new KindmemClient('kmk_x', { baseUrl: live().url });
    for (const name of [...Object.values(OPERATIONS), ...Object.values(ITERATORS)]) {
      assert.equal(typeof client[name], 'function', name);
    }
  });

  test('every error code the server can answer has its class', () => {
    const missing = live().serverCodes.filter((code) => !CODES.has(code));
    assert.deepEqual(missing, []);
  });
});

describe("an agent's calls", () => {
  test('a run remembers, replays the same tool call, lists by cursor and searches', async () => {
    const { agent } = await mint(person('cust'));
    // when it remembers three things, one of them twice
    const first = await agent.remember({
      type: 'preference',
      text: 'Prefers green tea',
      tool_call_id: 'c-1',
    });
    const again = await agent.remember({
      type: 'preference',
      text: 'Prefers green tea',
      tool_call_id: 'c-1',
    });
    await agent.remember({ type: 'note', text: 'Asked about a late parcel', tool_call_id: 'c-2' });
    await agent.remember({ type: 'preference', text: 'Writes in Portuguese', tool_call_id: 'c-3' });
    // then the same call answers the first result
    assert.equal(first.outcome, 'created');
    assert.equal(again.outcome, 'replayed');
    assert.equal(again.fact.id, first.fact.id);
    assert.equal(first.fact.trust, 'unverified');
    assert.deepEqual(first.fact.subjects, [
      { kind: 'participant', id: first.fact.scope.participant_id },
    ]);
    // and a page of one at a time still yields every fact, newest first
    const listed: unknown[] = [];
    for await (const fact of agent.iterFacts({ limit: 1 })) listed.push(fact.content);
    assert.deepEqual(listed.slice(0, 3), [
      { text: 'Writes in Portuguese' },
      { text: 'Asked about a late parcel' },
      { text: 'Prefers green tea' },
    ]);
    // and keyword, semantic and hybrid search find by words and by meaning
    const keyword = await agent.searchFacts({ query: 'parcel', mode: 'keyword' });
    assert.deepEqual(
      keyword.hits.map((h) => [h.fact.content, h.ranks]),
      [[{ text: 'Asked about a late parcel' }, { keyword: 1 }]],
    );
    const hybrid = await agent.searchFacts({ query: 'green tea', top_k: 1 });
    assert.deepEqual(hybrid.hits[0]?.fact.content, { text: 'Prefers green tea' });
    assert.ok(hybrid.hits[0]?.score > 0);
  });

  test("another end user's run reads none of it, and a fact it may not read is FactNotFound", async () => {
    const { agent } = await mint(person('cust'));
    const written = await agent.remember({
      type: 'preference',
      text: 'Likes jazz',
      tool_call_id: 'c-1',
    });
    const { agent: stranger } = await mint(person('other'));
    assert.deepEqual((await stranger.searchFacts({ query: 'jazz', mode: 'keyword' })).hits, []);
    const error = await stranger.getFact(written.fact.id).catch((e: unknown) => e);
    assert.ok(error instanceof FactNotFound);
    assert.equal(error.status, 404);
    assert.equal(error.code, 'fact-not-found');
  });

  test('conversations: messages appended, read back, recalled by keyword with neighbours', async () => {
    const participant = person('cust');
    const { agent } = await mint(participant);
    const conversation = `${participant}-thread`;
    await agent.appendMessages(conversation, {
      messages: [
        { role: 'user', text: 'My parcel never arrived' },
        { role: 'agent', text: 'I opened a refund' },
        { role: 'user', text: 'Thanks, bye' },
      ],
    });
    const read = await agent.listMessages(conversation);
    assert.deepEqual(
      read.messages.map((m) => m.sequence),
      [1, 2, 3],
    );
    const found = await agent.recall({
      selections: [{ agent_id: live().agent }],
      mode: 'keyword',
      query: 'parcel',
      roles: ['user', 'agent'],
    });
    assert.equal(found.hits[0]?.message.text, 'My parcel never arrived');
    assert.deepEqual(found.hits[0]?.message.after, { role: 'agent', text: 'I opened a refund' });
  });

  test("a run's log: appended, paged, and its chain verified", async () => {
    const { agent, run } = await mint(person('cust'));
    for (const text of ['hi', 'how can I help?', 'bye']) {
      await agent.appendLog(run.id, { kind: 'turn', payload: { text } });
    }
    const entries = [];
    for await (const entry of agent.iterLog(run.id, { limit: 2 })) entries.push(entry);
    assert.deepEqual(
      entries.map((e) => e.sequence),
      [1, 2, 3],
    );
    assert.equal(entries[0]?.prev_hash, '0'.repeat(64));
    assert.equal(entries[1]?.prev_hash, entries[0]?.entry_hash);
    const verified = await agent.verifyLog(run.id);
    assert.equal(verified.ok, true);
    assert.equal(verified.length, 3);
    assert.equal(verified.head, entries[2]?.entry_hash);
  });

  test('capabilities say what answers for this credential', async () => {
    const { agent } = await mint(person('cust'));
    const caps = await agent.capabilities();
    assert.equal(caps.kind, 'run');
    assert.deepEqual(caps.facts.modes, ['keyword', 'semantic', 'hybrid']);
    assert.equal(caps.operations.remember, true);
    assert.equal(caps.operations.review, false);
    const bare = await mint(person('cust'), live().bareUrl);
    const none = await bare.agent.capabilities();
    assert.equal(none.embedder.available, false);
    assert.deepEqual(none.facts.unavailable_modes, {
      semantic: 'embedding-unavailable',
      hybrid: 'embedding-unavailable',
    });
  });
});

describe('memory files', () => {
  test('facts exported as memory files import again, once: the same files a second time write nothing', async () => {
    // given a fact of the project, written by the app
    const app = appClient();
    const tag = person('files');
    const written = await app.createFact({
      type: 'note',
      content: { text: `exported ${tag}` },
      scope: { project_id: live().project },
      tags: [tag],
    });
    // when its memory files are exported, as a zip, and imported back
    const zip = await app.exportFacts({ tag });
    assert.deepEqual([...zip.subarray(0, 2)], [0x50, 0x4b]); // "PK": a zip archive
    const imported = await app.importFacts(zip);
    // then the import recognises the fact it repeats and writes nothing new
    assert.deepEqual(
      imported.files.map((f) => [f.outcome, f.fact_id]),
      [['unchanged', written.fact.id]],
    );
    // and one memory file, as text, is refused whole with the file and its field named
    await assert.rejects(app.importFacts('---\nid: broken\n---\nno envelope\n'), ValidationError);
  });
});

describe('review, privacy and audit', () => {
  test('a wide-scope memory waits for review; approved, it is read; a second decision is a Conflict', async () => {
    const { agent } = await mint(person('cust'));
    const admin = adminClient();
    const text = `Customers want dark mode ${person('x')}`;
    const remembered = await agent.remember({ type: 'product-insight', text, tool_call_id: 'c-1' });
    assert.equal(remembered.fact.review, 'pending');
    assert.deepEqual(remembered.review?.reasons, ['wide-scope']);
    assert.ok(remembered.approval_id);
    const pending = [];
    for await (const approval of admin.iterApprovals({ limit: 1 })) pending.push(approval.id);
    assert.ok(pending.includes(remembered.approval_id));
    assert.deepEqual((await agent.searchFacts({ query: text, mode: 'keyword' })).hits, []);
    await admin.approve(remembered.approval_id, { note: 'fine' });
    const read = await agent.getFact(remembered.fact.id);
    assert.equal(read.review, 'approved');
    const twice = await admin.reject(remembered.approval_id).catch((e: unknown) => e);
    assert.ok(twice instanceof Conflict);
  });

  test('audit events name the reads and writes about a person; an erasure preview counts them', async () => {
    const participant = person('gone');
    const { agent } = await mint(participant);
    await agent.remember({ type: 'preference', text: 'Prefers mornings', tool_call_id: 'c-1' });
    await agent.listFacts();
    const admin = adminClient();
    // the tenant's events about that person, oldest first, a page of two at a time
    const events = [];
    for await (const event of admin.iterAudit({
      subject: `participant:${participant}`,
      limit: 2,
    })) {
      events.push(`${event.phase} ${event.endpoint} ${event.outcome}`);
    }
    assert.deepEqual(events.slice(0, 2), ['write POST remember success', 'read GET facts success']);
    // an erasure's dry run counts what it would erase; the erasure then holds the person
    const preview = await admin.previewErasure({
      target_kind: 'participant',
      target_id: participant,
    });
    assert.equal(preview.nothing_matches, false);
    const erasure = await admin.startErasure({
      target_kind: 'participant',
      target_id: participant,
      reason: 'asked',
    });
    assert.equal((await admin.getErasure(erasure.id)).target_kind, 'participant');
    const held = await agent
      .remember({ type: 'preference', text: 'x', tool_call_id: 'c-2' })
      .catch((e: unknown) => e);
    assert.ok(held instanceof ErasureInProgress);
    assert.equal(held.status, 409);
  });

  test('errors come typed: a bad token, a route a run may not call, an unknown field', async () => {
    const nobody = new KindmemClient('kmk_not-a-key', { baseUrl: live().url });
    assert.ok((await nobody.me().catch((e: unknown) => e)) instanceof Unauthenticated);
    const { agent } = await mint(person('cust'));
    assert.ok((await agent.listApprovals().catch((e: unknown) => e)) instanceof Forbidden);
    const bad = await appClient()
      .searchFacts({ query: 'x', ...({ colour: 'red' } as object) })
      .catch((e: unknown) => e);
    assert.ok(bad instanceof ValidationError);
    assert.match(JSON.stringify(bad.details), /colour/);
  });
});
