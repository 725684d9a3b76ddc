// kindmem-client/ai: kindmem as Vercel AI SDK tools (`ai`'s `tool()`, zod input schemas).
//
// `ai` and `zod` are this subpath's peer dependencies, never the core client's: importing
// `kindmem-client` alone loads neither.
//
// Each tool takes a `KindmemClient` bound to a run token (`app.withToken(run.token)`), so the
// model acts with the run's readers and writes under its agent's declarations, nothing wider.
// `remember` sends the SDK's own tool call id as kindmem's `tool_call_id`: a step the SDK (or
// the app) runs again answers the first result, `replayed`, never a second memory. An error
// answer throws its `KindmemError` (the SDK hands the model its message, the app its class).

import { tool } from 'ai';
import { z } from 'zod';

import type { KindmemClient } from './client.js';
import type { Fact, RecallHit, SearchHit } from './types.js';

export interface MemoryToolOptions {
  /**
   * The memory types the run's agent declares (its declaration in kindmem's console), for the
   * model to choose among; without them any type is offered and kindmem refuses an undeclared
   * one (`invalid-fact`).
   */
  readonly memoryTypes?: readonly [string, ...string[]];
}

export interface RecallToolOptions {
  /** The run's agent: recall is always one agent's conversations. */
  readonly agentId: string;
}

/** What the model reads of a fact: its id, type, content and whether it waits for review. */
export interface MemoryView {
  readonly memory_id: string;
  readonly type: string;
  readonly content: unknown;
  readonly version: number;
  readonly trust: Fact['trust'];
}

function view(fact: Fact): MemoryView {
  return {
    memory_id: fact.id,
    type: fact.type,
    content: fact.content,
    version: fact.version,
    trust: fact.trust,
  };
}

/** The `remember` tool: `POST /v1/remember` with the run token. */
export function rememberTool(client: KindmemClient, options: MemoryToolOptions = {}) {
  const type = options.memoryTypes ? z.enum(options.memoryTypes) : z.string().min(1).max(100);
  return tool({
    description:
      'Remember one short fact about the user or this conversation for later conversations. ' +
      'Use one of the declared memory types; give a key to replace an earlier value of the same slot.',
    inputSchema: z.object({
      type: type.describe('The kind of memory (one the agent declares).'),
      text: z.string().min(1).max(2000).describe('The fact, in one or two sentences.'),
      key: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe('The slot it fills, e.g. "preferred-channel".'),
      valid_until: z.iso
        .datetime({ offset: true })
        .optional()
        .describe('When it stops being true, if known.'),
    }),
    execute: async (input, { toolCallId, abortSignal }) => {
      const answer = await client.remember(
        { ...input, tool_call_id: toolCallId },
        abortSignal ? { signal: abortSignal } : {},
      );
      return {
        outcome: answer.outcome,
        memory: view(answer.fact),
        waits_for_review: answer.fact.review === 'pending',
        review_reasons: answer.review?.reasons ?? [],
      };
    },
  });
}

/** The `searchMemories` tool: `POST /v1/facts/search` (hybrid by default) with the run token. */
export function searchMemoriesTool(client: KindmemClient) {
  return tool({
    description:
      'Search what has been remembered about the user, the project and this conversation.',
    inputSchema: z.object({
      query: z.string().min(1).max(2000).describe('What to look for, in words.'),
      mode: z.enum(['keyword', 'semantic', 'hybrid']).optional().describe('Default hybrid.'),
      type: z.string().min(1).max(100).optional().describe('Only memories of this type.'),
      top_k: z
        .number()
        .int()
        .min(1)
        .max(100)
        .optional()
        .describe('How many, at most (default 10).'),
    }),
    execute: async (input, { abortSignal }) => {
      const answer = await client.searchFacts(input, abortSignal ? { signal: abortSignal } : {});
      return {
        hits: answer.hits.map((hit: SearchHit) => ({
          ...view(hit.fact),
          score: hit.score,
          ranks: hit.ranks,
        })),
      };
    },
  });
}

/** The `recall` tool: `POST /v1/recall` of the agent's earlier conversations with the run token. */
export function recallTool(client: KindmemClient, options: RecallToolOptions) {
  return tool({
    description:
      'Recall messages of earlier conversations with this user: newest first (list), or by words or meaning.',
    inputSchema: z.object({
      mode: z.enum(['list', 'keyword', 'semantic', 'hybrid']).describe('list needs no query.'),
      query: z.string().min(1).max(2000).optional(),
      top_k: z.number().int().min(1).max(100).optional(),
      roles: z
        .array(z.enum(['user', 'agent']))
        .min(1)
        .max(2)
        .optional()
        .describe("Default ['user']."),
      exclude_conversation_id: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe('Leave this conversation out.'),
    }),
    execute: async ({ exclude_conversation_id, ...input }, { abortSignal }) => {
      const selection = {
        agent_id: options.agentId,
        ...(exclude_conversation_id ? { exclude_conversation_id } : {}),
      };
      const answer = await client.recall(
        { ...input, selections: [selection] },
        abortSignal ? { signal: abortSignal } : {},
      );
      return {
        hits: answer.hits.map((hit: RecallHit) => ({
          conversation_id: hit.message.conversation_id,
          sequence: hit.message.sequence,
          role: hit.message.role,
          text: hit.message.text,
          created_at: hit.message.created_at,
          score: hit.score,
          before: hit.message.before,
          after: hit.message.after,
        })),
      };
    },
  });
}

/** The three tools, named as an AI SDK `tools` object takes them. */
export function kindmemTools(
  client: KindmemClient,
  options: MemoryToolOptions & RecallToolOptions,
) {
  return {
    remember: rememberTool(client, options),
    searchMemories: searchMemoriesTool(client),
    recall: recallTool(client, options),
  };
}
