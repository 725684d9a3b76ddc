// Which client method calls which route: every `METHOD /path` of kindmem's OpenAPI schema.
//
// The package's tests hold this table against the served schema (a route the API has and the
// table lacks fails), and check that each method sends what it says here.

import type { KindmemClient } from './client.js';

type Method = {
  [K in keyof KindmemClient]: KindmemClient[K] extends (...args: never[]) => unknown ? K : never;
}[keyof KindmemClient];

export const OPERATIONS: Readonly<Record<string, Method>> = {
  'GET /v1/me': 'me',
  'GET /v1/capabilities': 'capabilities',
  'POST /v1/runs': 'mintRun',
  'GET /v1/facts': 'listFacts',
  'POST /v1/facts': 'createFact',
  'POST /v1/facts/search': 'searchFacts',
  'GET /v1/facts/export': 'exportFacts',
  'POST /v1/facts/import': 'importFacts',
  'GET /v1/facts/{fact_id}': 'getFact',
  'DELETE /v1/facts/{fact_id}': 'deleteFact',
  'GET /v1/facts/{fact_id}/revisions': 'factRevisions',
  'POST /v1/facts/{fact_id}/supersede': 'supersedeFact',
  'PATCH /v1/facts/{fact_id}': 'patchFact',
  'POST /v1/facts/{fact_id}/verify': 'verifyFact',
  'GET /v1/facts/{fact_id}/links': 'factLinks',
  'POST /v1/facts/{fact_id}/links': 'linkFacts',
  'PATCH /v1/facts/{fact_id}/links/{link_id}': 'updateLink',
  'DELETE /v1/facts/{fact_id}/links/{link_id}': 'deleteLink',
  'POST /v1/remember': 'remember',
  'GET /v1/approvals': 'listApprovals',
  'POST /v1/approvals/{approval_id}/approve': 'approve',
  'POST /v1/approvals/{approval_id}/reject': 'reject',
  'POST /v1/approvals/{approval_id}/verify': 'approveAndVerify',
  'GET /v1/conversations/{conversation_id}/messages': 'listMessages',
  'POST /v1/conversations/{conversation_id}/messages': 'appendMessages',
  'DELETE /v1/conversations/{conversation_id}/messages': 'clearMessages',
  'DELETE /v1/conversations/{conversation_id}/messages/{sequence}': 'deleteMessage',
  'POST /v1/conversations/{conversation_id}/extract': 'extract',
  'GET /v1/conversations/{conversation_id}/extract': 'extractions',
  'POST /v1/recall': 'recall',
  'GET /v1/runs/{run_id}/log': 'readLog',
  'POST /v1/runs/{run_id}/log': 'appendLog',
  'GET /v1/runs/{run_id}/log/verify': 'verifyLog',
  'POST /v1/erasures': 'startErasure',
  'GET /v1/erasures/{erasure_id}': 'getErasure',
  'POST /v1/subject-access-requests': 'requestAccessExport',
  'GET /v1/subject-access-requests/{request_id}': 'getAccessRequest',
  'GET /v1/subject-access-requests/{request_id}/download': 'downloadAccessExport',
  'GET /v1/audit': 'listAudit',
  'GET /v1/webhooks': 'listWebhooks',
  'POST /v1/webhooks': 'createWebhook',
  'DELETE /v1/webhooks/{endpoint_id}': 'deleteWebhook',
};

/** The pages above that have an iterator (an async generator) over every item. */
export const ITERATORS: Readonly<Record<string, Method>> = {
  listFacts: 'iterFacts',
  listApprovals: 'iterApprovals',
  readLog: 'iterLog',
  listAudit: 'iterAudit',
};
