// The seed's documented behaviours, through `KindmemMemory` against a live kindmem: the guard
// before the limit, pending facts unseen, no embedder, an erasure in progress, the run log's
// chain, `remember` replayed per tool call, and readers that come from the token.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { KindmemClient } from 'kindmem-client';
import {
  KindmemMemory,
  LOG_KINDS,
  type LogEntry,
  type MemoryReaders,
  type RememberFactInput,
  type RunId,
  type TenantId,
} from 'kindmem-client/memory';

import { adminClient, appClient, json, live, mint, person, stubFetch } from './support.js';

/** A run for a new end user, its client and its binding, with the binding's tenant and readers. */
async function bound(url = live().url) {
  const participant = person('cust');
  const minted = await mint(participant, url);
  const memory = new KindmemMemory(minted.agent);
  return {
    ...minted,
    participant,
    memory,
    tenantId: await memory.tenantId(),
    readers: await memory.readers(),
  };
}

function rememberCall(
  b: Awaited<ReturnType<typeof bound>>,
  type: string,
  text: string,
  toolCallId: string,
  key?: string,
): RememberFactInput {
  return {
    tenantId: b.tenantId,
    scope: { tenantId: b.tenantId },
    type,
    content: key === undefined ? { text } : { text, key },
    subjects: [{ kind: 'participant', id: b.participant }],
    agent: { id: b.run.agent_id, version: b.run.agent_version },
    generatedBy: { runId: b.run.id, toolCallId },
    keepDays: 90,
  };
}

/** A fact type of the test's own, so that the tenant's other tests' facts are not in its way. */
const ownType = (label: string) => `${label}-${person('t').slice(2)}`;

function unwrap<T>(result: { kind: 'ok'; value: T } | { kind: 'err'; error: unknown }): T {
  if (result.kind === 'err') assert.fail(`expected ok, got ${JSON.stringify(result.error)}`);
  return result.value;
}

describe('reads: the guard in the query, before the limit', () => {
  test("a limit counts only what the run may read, however many others' facts are newer", async () => {
    const b = await bound();
    const type = ownType('parcel');
    const app = appClient();
    // given two facts about the run's end user, then 25 newer ones about someone else
    for (const n of [1, 2]) {
      await app.createFact({
        type,
        content: { text: `parcel ${n} for me` },
        scope: { project_id: live().project, participant_id: b.participant },
      });
    }
    const stranger = person('stranger');
    for (let n = 0; n < 25; n++) {
      await app.createFact({
        type,
        content: { text: `parcel ${n} for them` },
        scope: { project_id: live().project, participant_id: stranger },
      });
    }
    // when the run lists and searches with a limit of two
    const listed = unwrap(
      await b.memory.listFacts({ tenantId: b.tenantId, readers: b.readers, type, limit: 2 }),
    );
    const found = unwrap(
      await b.memory.searchByKeyword({
        tenantId: b.tenantId,
        readers: b.readers,
        type,
        query: 'parcel',
        topK: 2,
      }),
    );
    // then it gets its own two, never an empty or short page
    assert.deepEqual(
      listed.map((f) => f.content),
      [{ text: 'parcel 2 for me' }, { text: 'parcel 1 for me' }],
    );
    assert.equal(listed[0]?.scope.participantId, b.participant);
    assert.equal(listed[0]?.scope.tenantId, b.tenantId);
    assert.deepEqual(
      found.map((h) => h.fact.scope.participantId),
      [b.participant, b.participant],
    );
    assert.ok(found.every((h) => h.score > 0));
  });

  test('a pending fact is seen by no read until a reviewer approves it', async () => {
    const b = await bound();
    const word = person('darkmode');
    // given a memory the agent's declaration makes wide (same-project): it waits for review
    const remembered = unwrap(
      await b.memory.remember(
        rememberCall(b, 'product-insight', `Customers ask for ${word}`, 'c-1'),
      ),
    );
    assert.equal(remembered.outcome, 'created');
    assert.equal(remembered.fact.review, 'pending');
    assert.ok(remembered.approvalId);
    // then neither list nor search returns it
    const reads = async () => ({
      listed: unwrap(
        await b.memory.listFacts({
          tenantId: b.tenantId,
          readers: b.readers,
          type: 'product-insight',
        }),
      ),
      found: unwrap(
        await b.memory.searchByKeyword({ tenantId: b.tenantId, readers: b.readers, query: word }),
      ),
    });
    const before = await reads();
    assert.ok(!before.listed.some((f) => f.id === remembered.fact.id));
    assert.deepEqual(before.found, []);
    // when a reviewer approves it, every read has it, no longer pending
    await adminClient().approve(remembered.approvalId);
    const after = await reads();
    assert.ok(after.listed.some((f) => f.id === remembered.fact.id && f.review === undefined));
    assert.deepEqual(
      after.found.map((h) => h.fact.id),
      [remembered.fact.id],
    );
  });

  test("kindmem's hybrid search gives the seed's Fused hits, each leg's rank", async () => {
    const b = await bound();
    unwrap(
      await b.memory.remember(
        rememberCall(b, 'preference', 'Prefers oolong tea in the morning', 'c-1'),
      ),
    );
    const fused = unwrap(
      await b.memory.searchHybrid({
        tenantId: b.tenantId,
        readers: b.readers,
        query: 'oolong tea',
        topK: 1,
      }),
    );
    assert.equal(fused.length, 1);
    assert.deepEqual(fused[0]?.item.content, { text: 'Prefers oolong tea in the morning' });
    assert.deepEqual(fused[0]?.ranks, { keyword: 1, semantic: 1 });
    assert.ok((fused[0]?.score ?? 0) > 0);
  });
});

describe('readers come from the token', () => {
  test('a wider set is sent to kindmem and intersected with the token’s: never more read', async () => {
    // given a run for an end user, their fact and another end user's
    const b = await bound();
    const type = ownType('wider');
    const someoneElse = person('someone-else');
    const app = appClient();
    for (const [who, text] of [
      [b.participant, 'mine'],
      [someoneElse, 'theirs'],
    ] as const) {
      await app.createFact({
        type,
        content: { text: `${text} wider tea` },
        scope: { project_id: live().project, participant_id: who },
      });
    }
    const { fetch, sent } = stubFetchThrough();
    const memory = new KindmemMemory(new KindmemClient(b.token, { baseUrl: live().url, fetch }));
    const readers = b.readers;
    const wider: MemoryReaders[] = [
      { ...readers, participantIds: [b.participant, someoneElse] },
      { all: true },
      { ...readers, onBehalfOfProjectIds: readers.projectIds ?? [] },
    ];
    for (const given of wider) {
      // when the run reads with readers reaching past its token's
      const listed = unwrap(await memory.listFacts({ tenantId: b.tenantId, readers: given, type }));
      const found = unwrap(
        await memory.searchByKeyword({ tenantId: b.tenantId, readers: given, type, query: 'tea' }),
      );
      const recalled = unwrap(
        await memory.searchConversations({
          tenantId: b.tenantId,
          readers: given,
          selections: [{ agentId: live().agent, participantId: someoneElse }],
          mode: 'list',
          topK: 5,
        }),
      );
      // then it reads its own end user's fact only, never the other's
      assert.deepEqual(
        listed.map((f) => f.content),
        [{ text: 'mine wider tea' }],
      );
      assert.deepEqual(
        found.map((h) => h.fact.content),
        [{ text: 'mine wider tea' }],
      );
      assert.deepEqual(recalled, []);
    }
    // and the narrowings went to kindmem with the reads (`all` narrows nothing: not sent)
    const narrowed = sent
      .filter((s) => s.url.pathname === '/v1/facts/search')
      .map(
        (s) => (JSON.parse(s.body ?? '{}') as { readers?: { participant_ids: string[] } }).readers,
      );
    assert.deepEqual(narrowed[0]?.participant_ids, [b.participant, someoneElse]);
    assert.equal(narrowed[1], undefined);
    const listedWith = sent
      .filter((s) => s.url.pathname === '/v1/facts')
      .map((s) => s.url.searchParams.get('readers'));
    assert.ok(listedWith[0]?.includes(someoneElse));
    assert.equal(listedWith[1], null);
  });

  test('the readers sent: as handed, without ids kindmem never gives, none when they narrow nothing', async () => {
    const P = '3f2b8c1e-0000-4000-8000-000000000001';
    const Q = '3f2b8c1e-0000-4000-8000-000000000002';
    const credential = {
      all: false,
      project_ids: [P],
      org_ids: [],
      user_ids: [],
      participant_ids: [],
      thread_ids: [],
      on_behalf_of_project_ids: [P],
    };
    const { fetch, sent } = stubFetch((request) =>
      request.url.pathname === '/v1/me'
        ? json(200, {
            kind: 'app',
            tenant_id: P,
            principal: 'app:1',
            run_id: null,
            readers: credential,
          })
        : json(200, { hits: [] }),
    );
    const memory = new KindmemMemory(
      new KindmemClient('kmk_test', { baseUrl: 'http://kindmem.test', fetch }),
    );
    const tenantId = await memory.tenantId();
    const search = async (readers?: MemoryReaders) => {
      unwrap(
        await memory.searchByKeyword({
          tenantId,
          query: 'tea',
          topK: 500,
          ...(readers ? { readers } : {}),
        }),
      );
      const body = JSON.parse(sent.at(-1)?.body ?? '{}') as { readers?: unknown; top_k: number };
      assert.equal(body.top_k, 100); // kindmem's deepest page, the guard and narrowing before it
      return body.readers;
    };
    // a narrower set, its ids as kindmem keeps them; a not-UUID or upper-case project id
    // and an overlong participant id can match no kindmem container, as the seed compares
    assert.deepEqual(
      await search({
        projectIds: [P, Q, 'not-a-uuid', P.toUpperCase()] as never,
        participantIds: ['cust-7', 'cust-7', 'x'.repeat(201)],
      }),
      {
        project_ids: [P, Q],
        org_ids: [],
        user_ids: [],
        participant_ids: ['cust-7'],
        thread_ids: [],
        on_behalf_of_project_ids: [],
      },
    );
    // no readers at all: tenant-wide facts only, as the seed says
    assert.deepEqual(await search(), {
      project_ids: [],
      org_ids: [],
      user_ids: [],
      participant_ids: [],
      thread_ids: [],
      on_behalf_of_project_ids: [],
    });
    // the token's own readers, or all: nothing to narrow, nothing sent
    assert.equal(await search(await memory.readers()), undefined);
    assert.equal(await search({ all: true }), undefined);
  });

  test("an app key handed a run's narrower readers reads what the run reads, below 100 better hits", async () => {
    // given a run's end user with three facts, and 105 better matches about someone else,
    // newer, in the same project (the app key reads them all)
    const b = await bound();
    const type = ownType('ranked');
    const app = appClient();
    for (const n of [1, 2, 3]) {
      await app.createFact({
        type,
        content: { text: `note ${n} about oolong tea` },
        scope: { project_id: live().project, participant_id: b.participant },
      });
    }
    const admin = adminClient(); // its own write budget
    const stranger = person('stranger');
    for (let start = 0; start < 105; start += 15) {
      await Promise.all(
        Array.from({ length: 15 }, (_, i) =>
          admin.createFact({
            type,
            content: { text: `oolong tea oolong tea ${start + i}` },
            scope: { project_id: live().project, participant_id: stranger },
          }),
        ),
      );
    }
    const asApp = new KindmemMemory(app);
    const own = (facts: readonly { scope: { participantId?: string } }[]) =>
      facts.filter((f) => f.scope.participantId === b.participant).length;
    // (with its own readers, the app's top 100 holds none of the three)
    const appReaders = await asApp.readers();
    const plain = unwrap(
      await asApp.searchByKeyword({
        tenantId: b.tenantId,
        readers: appReaders,
        type,
        query: 'oolong tea',
        topK: 100,
      }),
    );
    assert.equal(plain.length, 100);
    assert.equal(own(plain.map((h) => h.fact)), 0);

    // when the app's binding reads with the run's readers
    const found = unwrap(
      await asApp.searchByKeyword<{ text: string }>({
        tenantId: b.tenantId,
        readers: b.readers,
        type,
        query: 'oolong tea',
        topK: 10,
      }),
    );
    const listed = unwrap(
      await asApp.listFacts({ tenantId: b.tenantId, readers: b.readers, type, limit: 10 }),
    );

    // then no persistence-error: the three facts the run may read, and nothing else
    assert.deepEqual(found.map((h) => h.fact.content?.text).sort(), [
      'note 1 about oolong tea',
      'note 2 about oolong tea',
      'note 3 about oolong tea',
    ]);
    assert.deepEqual(
      listed.map((f) => f.content),
      [
        { text: 'note 3 about oolong tea' },
        { text: 'note 2 about oolong tea' },
        { text: 'note 1 about oolong tea' },
      ],
    );
  });

  test("an app key narrowed to a run's readers recalls that end user's conversation only", async () => {
    // given the run's conversation and another end user's, both the app's
    const b = await bound();
    const other = await mint(person('cust'));
    await b.agent.appendMessages(`${b.participant}-thread`, {
      messages: [{ role: 'user', text: 'my parcel is late' }],
    });
    await other.agent.appendMessages(`${other.run.participant_id}-thread`, {
      messages: [{ role: 'user', text: 'their parcel is late' }],
    });
    const asApp = new KindmemMemory(appClient());
    // when the app recalls with the run's readers
    const recalled = unwrap(
      await asApp.searchConversations({
        tenantId: b.tenantId,
        readers: b.readers,
        selections: [{ agentId: live().agent }],
        mode: 'keyword',
        query: 'parcel late',
        topK: 5,
      }),
    );
    // then only the run's end user's words come back
    assert.deepEqual(
      recalled.map((h) => h.message.text),
      ['my parcel is late'],
    );
  });

  test('a narrower set is applied on top: no readers at all read tenant-wide facts only', async () => {
    const b = await bound();
    const type = ownType('policy');
    const admin = adminClient();
    await admin.createFact({ type, content: { text: 'Refunds within 30 days' } });
    await admin.createFact({
      type,
      content: { text: 'Project rule' },
      scope: { project_id: live().project },
    });
    await appClient().createFact({
      type,
      content: { text: 'Mine' },
      scope: { project_id: live().project, participant_id: b.participant },
    });
    const contents = async (readers: MemoryReaders | undefined) =>
      unwrap(
        await b.memory.listFacts({ tenantId: b.tenantId, type, ...(readers ? { readers } : {}) }),
      ).map((f) => f.content);
    assert.deepEqual(await contents(b.readers), [
      { text: 'Mine' },
      { text: 'Project rule' },
      { text: 'Refunds within 30 days' },
    ]);
    assert.deepEqual(await contents(undefined), [{ text: 'Refunds within 30 days' }]);
    const projectOnly: MemoryReaders = { projectIds: b.readers.projectIds ?? [] };
    assert.deepEqual(await contents(projectOnly), [
      { text: 'Project rule' },
      { text: 'Refunds within 30 days' },
    ]);
    // and a narrowed limit still counts only what the narrower readers see
    const one = unwrap(await b.memory.listFacts({ tenantId: b.tenantId, type, limit: 1 }));
    assert.deepEqual(
      one.map((f) => f.content),
      [{ text: 'Refunds within 30 days' }],
    );
  });

  test("another tenant id than the binding's is refused; the caller's own name for it is kept", async () => {
    const b = await bound();
    const other = await b.memory.listFacts({
      tenantId: 'some-other-tenant' as TenantId,
      readers: b.readers,
    });
    assert.ok(other.kind === 'err' && other.error.code === 'persistence-error');
    const named = new KindmemMemory(b.agent, { tenantId: 'acme' });
    const acme = 'acme' as TenantId;
    unwrap(
      await named.remember({
        ...rememberCall(b, 'preference', 'Prefers letters', 'c-1'),
        tenantId: acme,
      }),
    );
    const facts = unwrap(
      await named.listFacts({ tenantId: acme, readers: b.readers, type: 'preference' }),
    );
    assert.deepEqual(
      facts.map((f) => [f.content, f.scope.tenantId]),
      [[{ text: 'Prefers letters' }, 'acme']],
    );
  });
});

describe('embeddings are kindmem’s', () => {
  test('without an embedder, semantic search and recall fail loudly, never an empty list', async () => {
    const b = await bound(live().bareUrl);
    unwrap(await b.memory.remember(rememberCall(b, 'preference', 'Prefers tea', 'c-1')));
    const registry = emptyRegistry();
    const semantic = await b.memory.searchBySemantic({
      tenantId: b.tenantId,
      readers: b.readers,
      query: 'tea',
      embeddingRegistry: registry,
    });
    const recalled = await b.memory.searchConversations({
      tenantId: b.tenantId,
      readers: b.readers,
      selections: [{ agentId: live().agent }],
      mode: 'semantic',
      query: 'tea',
      topK: 5,
    });
    for (const result of [semantic, recalled]) {
      assert.ok(result.kind === 'err', JSON.stringify(result));
      assert.equal(result.error.code, 'no-embedding-provider');
      assert.match(result.error.message, /embedding-unavailable/);
    }
    // and keyword search answers on the same server
    const keyword = unwrap(
      await b.memory.searchByKeyword({ tenantId: b.tenantId, readers: b.readers, query: 'tea' }),
    );
    assert.deepEqual(
      keyword.map((h) => h.fact.content),
      [{ text: 'Prefers tea' }],
    );
  });

  test("with one, semantic search answers; a model other than kindmem's is unknown-embedding-model", async () => {
    const b = await bound();
    unwrap(await b.memory.remember(rememberCall(b, 'preference', 'Prefers jasmine tea', 'c-1')));
    const search = (embeddingModel?: string) =>
      b.memory.searchBySemantic({
        tenantId: b.tenantId,
        readers: b.readers,
        query: 'jasmine tea',
        embeddingRegistry: emptyRegistry(),
        topK: 1,
        ...(embeddingModel ? { embeddingModel } : {}),
      });
    const hits = unwrap(await search());
    assert.deepEqual(
      hits.map((h) => h.fact.content),
      [{ text: 'Prefers jasmine tea' }],
    );
    assert.ok((hits[0]?.score ?? 0) > 0);
    const caps = await b.agent.capabilities();
    assert.equal(unwrap(await search(caps.embedder.model ?? '')).length, 1);
    const wrong = await search('text-embedding-3-small');
    assert.ok(wrong.kind === 'err' && wrong.error.code === 'unknown-embedding-model');
    assert.deepEqual(wrong.error.known, [caps.embedder.model]);
  });
});

describe('writes', () => {
  test('remember: the same tool call replays the first result; a new value for the slot supersedes it', async () => {
    const b = await bound();
    const call = rememberCall(b, 'preference', 'Prefers email', 'call-1', 'channel');
    const first = unwrap(await b.memory.remember(call));
    const again = unwrap(await b.memory.remember(call));
    const changed = unwrap(
      await b.memory.remember(rememberCall(b, 'preference', 'Prefers SMS', 'call-2', 'channel')),
    );
    assert.deepEqual(
      [first.outcome, again.outcome, changed.outcome],
      ['created', 'replayed', 'superseded'],
    );
    assert.equal(again.fact.id, first.fact.id);
    assert.equal(again.fact.revisionId, first.fact.revisionId);
    assert.equal(changed.fact.id, first.fact.id);
    assert.equal(changed.fact.version, 2);
    assert.deepEqual(changed.fact.content, { text: 'Prefers SMS', key: 'channel' });
    // kindmem filled in what the declaration and the run say, whatever the caller sent
    assert.equal(first.fact.trust, 'unverified');
    assert.deepEqual(first.fact.attributedTo, {
      kind: 'agent',
      id: b.run.agent_id,
      agentVersion: b.run.agent_version,
    });
    assert.deepEqual(first.fact.generatedBy, { runId: b.run.id, toolCallId: 'call-1' });
    assert.equal(first.fact.scope.participantId, b.participant);
    assert.ok(first.fact.expiresAt);
  });

  test('remember for another run than the token’s is invalid-fact, and writes nothing', async () => {
    const b = await bound();
    const call = rememberCall(b, 'preference', 'Prefers fax', 'c-1');
    const wrong = await b.memory.remember({
      ...call,
      generatedBy: { ...call.generatedBy, runId: '00000000-0000-0000-0000-000000000000' },
    });
    assert.ok(wrong.kind === 'err' && wrong.error.code === 'invalid-fact');
    assert.deepEqual(
      unwrap(
        await b.memory.listFacts({ tenantId: b.tenantId, readers: b.readers, type: 'preference' }),
      ),
      [],
    );
    const undeclared = await b.memory.remember(rememberCall(b, 'shoe-size', '42', 'c-2'));
    assert.ok(undeclared.kind === 'err' && undeclared.error.code === 'invalid-fact');
  });

  test('nothing lands for a person while their erasure runs: erasure-in-progress', async () => {
    const b = await bound();
    unwrap(await b.memory.remember(rememberCall(b, 'preference', 'Prefers mornings', 'c-1')));
    await adminClient().startErasure({
      target_kind: 'participant',
      target_id: b.participant,
      reason: 'asked',
    });
    const remembered = await b.memory.remember(
      rememberCall(b, 'preference', 'Prefers evenings', 'c-2'),
    );
    const logged = await b.memory.appendLog({
      tenantId: b.tenantId,
      runId: b.run.id as RunId,
      kind: 'user-message',
      scope: { tenantId: b.tenantId },
      payload: { text: 'hello' },
    });
    for (const result of [remembered, logged]) {
      assert.ok(result.kind === 'err', JSON.stringify(result));
      assert.equal(result.error.code, 'erasure-in-progress');
    }
    // and what was there reads as nothing meanwhile
    assert.deepEqual(
      unwrap(
        await b.memory.listFacts({ tenantId: b.tenantId, readers: b.readers, type: 'preference' }),
      ),
      [],
    );
  });
});

describe('the run log', () => {
  test('entries chain: sequence from 1, each prevHash the one before, the seed’s kinds kept', async () => {
    const b = await bound();
    const runId = b.run.id as RunId;
    const scope = { tenantId: b.tenantId, threadId: b.readers.threadIds?.[0] };
    const append = async (
      kind: LogEntry['kind'],
      payload?: unknown,
      actor?: string,
      causedByLogId?: string,
    ) =>
      unwrap(
        await b.memory.appendLog({
          tenantId: b.tenantId,
          runId,
          kind,
          scope: scope.threadId
            ? { tenantId: b.tenantId, threadId: scope.threadId }
            : { tenantId: b.tenantId },
          ...(payload === undefined ? {} : { payload }),
          ...(actor ? { actor } : {}),
          ...(causedByLogId ? { causedByLogId } : {}),
        }),
      );
    const said = await append('user-message', 'Where is my parcel?', 'user');
    const called = await append('tool-call', { tool: 'track', args: { id: 7 } }, 'agent', said.id);
    const thought = await append('internal-thought');
    // then the binding answered each entry as stored
    assert.deepEqual([said.sequence, called.sequence, thought.sequence], [1, 2, 3]);
    assert.equal(said.prevHash, '0'.repeat(64));
    assert.equal(called.prevHash, said.entryHash);
    assert.equal(thought.prevHash, called.entryHash);
    assert.equal(called.causedByLogId, said.id);
    // and reads it back the same, the seed's kinds, payloads, actors and scope included
    const log = unwrap(await b.memory.readLog({ tenantId: b.tenantId, runId }));
    assert.deepEqual(log, [said, called, thought]);
    assert.deepEqual(
      log.map((e) => [e.kind, e.payload, e.actor]),
      [
        ['user-message', 'Where is my parcel?', 'user'],
        ['tool-call', { tool: 'track', args: { id: 7 } }, 'agent'],
        ['internal-thought', undefined, undefined],
      ],
    );
    assert.ok(
      log.every(
        (e) =>
          e.hashVersion === 2 &&
          e.payloadSalt &&
          e.runId === runId &&
          e.scope.tenantId === b.tenantId,
      ),
    );
    // sinceSequence is an inclusive lower bound
    assert.deepEqual(
      unwrap(await b.memory.readLog({ tenantId: b.tenantId, runId, sinceSequence: 2 })).map(
        (e) => e.sequence,
      ),
      [2, 3],
    );
    // and kindmem verifies the chain the binding wrote
    const verified = await b.agent.verifyLog(b.run.id);
    assert.deepEqual([verified.ok, verified.length, verified.head], [true, 3, thought.entryHash]);
  });

  test('each of the seed’s thirteen kinds is kept; an entry another client wrote reads as stored', async () => {
    const b = await bound();
    const runId = b.run.id as RunId;
    for (const kind of LOG_KINDS) {
      unwrap(
        await b.memory.appendLog({
          tenantId: b.tenantId,
          runId,
          kind,
          scope: { tenantId: b.tenantId },
          payload: { kind },
        }),
      );
    }
    await b.agent.appendLog(b.run.id, { kind: 'memory-write', payload: { fact: 'f-1' } });
    const log = unwrap(await b.memory.readLog({ tenantId: b.tenantId, runId }));
    assert.deepEqual(
      log.map((e) => [e.kind, e.payload]),
      [...LOG_KINDS.map((kind) => [kind, { kind }]), ['artifact-produced', { fact: 'f-1' }]],
    );
    // and kindmem holds each as the nearest of its own kinds
    const stored = [];
    for await (const entry of b.agent.iterLog(b.run.id)) stored.push(entry.kind);
    assert.deepEqual(stored.slice(0, 4), ['turn', 'turn', 'turn', 'tool-call']);
    assert.deepEqual(
      new Set(stored),
      new Set([
        'turn',
        'tool-call',
        'tool-result',
        'decision',
        'memory-read',
        'note',
        'memory-write',
      ]),
    );
  });

  test('an entry kindmem cannot keep is invalid-log-entry', async () => {
    const b = await bound();
    const entry = {
      tenantId: b.tenantId,
      runId: b.run.id as RunId,
      scope: { tenantId: b.tenantId },
    };
    const unknownKind = await b.memory.appendLog({
      ...entry,
      kind: 'telepathy' as LogEntry['kind'],
    });
    const notJson = await b.memory.appendLog({
      ...entry,
      kind: 'user-message',
      payload: { n: 10n },
    });
    const causeUnknown = await b.memory.appendLog({
      ...entry,
      kind: 'user-message',
      causedByLogId: 'not-an-id',
    });
    for (const result of [unknownKind, notJson, causeUnknown]) {
      assert.ok(
        result.kind === 'err' && result.error.code === 'invalid-log-entry',
        JSON.stringify(result, (_, v) => (typeof v === 'bigint' ? String(v) : v)),
      );
    }
    assert.deepEqual(
      unwrap(await b.memory.readLog({ tenantId: b.tenantId, runId: entry.runId })),
      [],
    );
  });
});

describe('recall', () => {
  test("searchConversations recalls the person's earlier messages in the seed's shape", async () => {
    const b = await bound();
    const conversation = `${b.participant}-thread`;
    await b.agent.appendMessages(conversation, {
      messages: [
        { role: 'user', text: 'My parcel never arrived' },
        { role: 'agent', text: 'I opened a refund' },
      ],
    });
    const input = {
      tenantId: b.tenantId,
      readers: b.readers,
      selections: [{ agentId: live().agent }],
      topK: 5,
    };
    const keyword = unwrap(
      await b.memory.searchConversations({
        ...input,
        mode: 'keyword',
        query: 'parcel',
        roles: ['user', 'agent'],
      }),
    );
    assert.equal(keyword.length, 1);
    const message = keyword[0]?.message;
    assert.deepEqual(
      message && [
        message.conversationId,
        message.sequence,
        message.role,
        message.text,
        message.agentId,
        message.participantId,
        message.after,
      ],
      [
        conversation,
        1,
        'user',
        'My parcel never arrived',
        live().agent,
        b.participant,
        { role: 'agent', text: 'I opened a refund' },
      ],
    );
    assert.ok((keyword[0]?.score ?? 0) > 0);
    const listed = unwrap(await b.memory.searchConversations({ ...input, mode: 'list' }));
    assert.deepEqual(
      listed.map((h) => [h.message.text, h.score]),
      [['My parcel never arrived', undefined]],
    );
    assert.deepEqual(
      unwrap(await b.memory.searchConversations({ ...input, selections: [], mode: 'list' })),
      [],
    );
  });
});

/** A `fetch` that records each request and sends it on to the server. */
function stubFetchThrough() {
  return stubFetch((sent) =>
    fetch(sent.url, {
      method: sent.method,
      headers: sent.headers,
      ...(sent.body ? { body: sent.body } : {}),
    }),
  );
}

/** The seed's `embeddingRegistry`, empty: kindmem embeds the query itself, with its own model. */
function emptyRegistry() {
  const none = {
    kind: 'err' as const,
    error: { code: 'no-embedding-provider' as const, message: 'none' },
  };
  return {
    register: () => ({ kind: 'ok' as const, value: undefined }),
    getByModel: () => undefined,
    list: () => [],
    has: () => false,
    size: () => 0,
    resolve: () => none,
  };
}
