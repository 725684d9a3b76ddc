// Conversations' messages, and recall of earlier ones.

import { type RequestOptions, segment } from './core.js';
import { Approvals } from './approvals.js';
import type {
  Append,
  BodyOf,
  Extract,
  ExtractionState,
  MessageDelete,
  MessageList,
  MessagesClear,
  QueryOf,
  Recall,
} from './types.js';

/** `/v1/conversations/{id}/messages`, `/v1/conversations/{id}/extract` and `/v1/recall`. */
export class Conversations extends Approvals {
  /**
   * Append messages (`{messages: [{role, text}]}`, at most 100) to a conversation; an app key
   * names `agent_id` and `project_id` (and the person) when it creates the conversation.
   */
  appendMessages(
    conversationId: string,
    body: BodyOf<'/v1/conversations/{conversation_id}/messages', 'post'>,
    options?: RequestOptions,
  ): Promise<Append> {
    const path = `/v1/conversations/${segment(conversationId)}/messages`;
    return this.json('POST', path, { json: body }, options);
  }

  /**
   * The newest `limit` messages of a conversation (before `before_sequence`), oldest first, with
   * their `data`; `next_before_sequence` pages to older ones.
   */
  listMessages(
    conversationId: string,
    query: QueryOf<'/v1/conversations/{conversation_id}/messages', 'get'> = {},
    options?: RequestOptions,
  ): Promise<MessageList> {
    const path = `/v1/conversations/${segment(conversationId)}/messages`;
    return this.json('GET', path, { query }, options);
  }

  /** Delete one message of a conversation; the answer carries it. */
  deleteMessage(
    conversationId: string,
    sequence: number,
    options?: RequestOptions,
  ): Promise<MessageDelete> {
    const path = `/v1/conversations/${segment(conversationId)}/messages/${segment(sequence)}`;
    return this.json('DELETE', path, {}, options);
  }

  /** Delete every message of a conversation (it stays, its sequences go on). */
  clearMessages(conversationId: string, options?: RequestOptions): Promise<MessagesClear> {
    const path = `/v1/conversations/${segment(conversationId)}/messages`;
    return this.json('DELETE', path, {}, options);
  }

  /**
   * Extract memories from the conversation's messages since its watermark, in the background, by
   * the operator's chat model: `outcome` `queued` (the `job`), `already-queued` (the one before)
   * or `up-to-date`. Its decisions are written as the conversation's agent under remember's
   * review rules. `ExtractionUnavailable` without a chat model, `ExtractionQuota` past a cap.
   */
  extract(conversationId: string, options?: RequestOptions): Promise<Extract> {
    const path = `/v1/conversations/${segment(conversationId)}/extract`;
    return this.json('POST', path, { json: {} }, options);
  }

  /** The conversation's watermark and its newest extractions, each with its decisions. */
  extractions(conversationId: string, options?: RequestOptions): Promise<ExtractionState> {
    const path = `/v1/conversations/${segment(conversationId)}/extract`;
    return this.json('GET', path, {}, options);
  }

  /** Recall messages of earlier conversations the credential may read. */
  recall(body: BodyOf<'/v1/recall', 'post'>, options?: RequestOptions): Promise<Recall> {
    return this.json('POST', '/v1/recall', { json: body }, options);
  }
}
