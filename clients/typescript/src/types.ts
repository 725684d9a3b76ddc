// kindmem's request and answer shapes, named: each is the generated schema's own
// (`schema.ts`, written by openapi-typescript from kindmem's OpenAPI schema; never edited by
// hand), so a changed shape on the server is a type error here.

import type { components, paths } from './schema.js';

export type { components, operations, paths } from './schema.js';

export type Schemas = components['schemas'];
type Method = 'get' | 'post' | 'patch' | 'delete';
type Route<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** The query parameters of a route (`{}` where it has none). */
export type QueryOf<P extends keyof paths, M extends Method> =
  Route<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** The JSON body a route takes. */
export type BodyOf<
  P extends keyof paths,
  M extends Method,
  Media extends string = 'application/json',
> =
  Route<P, M> extends { requestBody?: infer B }
    ? NonNullable<B> extends { content: infer C }
      ? Media extends keyof C
        ? C[Media]
        : never
      : never
    : never;

/** What a route answers on success (the union of its 2xx JSON answers). */
export type AnswerOf<P extends keyof paths, M extends Method> =
  Route<P, M> extends { responses: infer R }
    ? {
        [S in keyof R & (200 | 201 | 202)]: R[S] extends {
          content: { 'application/json': infer J };
        }
          ? J
          : never;
      }[keyof R & (200 | 201 | 202)]
    : never;

export type WhoAmI = Schemas['WhoAmIOutput'];
export type Readers = Schemas['ReadersOutput'];
export type ReadersInput = Schemas['ReadersInputRequest'];
export type Capabilities = Schemas['CapabilitiesOutput'];
export type RunMint = Schemas['RunMintOutput'];
export type Run = Schemas['RunOutput'];
export type Fact = Schemas['FactOutput'];
export type Scope = Schemas['ScopeOutput'];
export type FactList = Schemas['FactListOutput'];
export type FactWrite = Schemas['FactWriteOutput'];
export type FactSearch = Schemas['FactSearchOutput'];
export type SearchHit = Schemas['SearchHitOutput'];
export type RevisionList = Schemas['RevisionListOutput'];
export type LinkCreate = Schemas['LinkCreateOutput'];
export type LinkChange = Schemas['LinkChangeOutput'];
export type FactImport = Schemas['FactImportOutput'];
export type LinkTraversal = Schemas['LinkTraversalOutput'];
export type Remember = Schemas['RememberOutput'];
export type Approval = Schemas['ApprovalOutput'];
export type ApprovalList = Schemas['ApprovalListOutput'];
export type Append = Schemas['AppendOutput'];
export type MessageList = Schemas['MessageListOutput'];
export type MessageDelete = Schemas['MessageDeleteOutput'];
export type MessagesClear = Schemas['MessagesClearOutput'];
export type Extract = Schemas['ExtractOutput'];
export type ExtractionState = Schemas['ExtractionStateOutput'];
export type Recall = Schemas['RecallOutput'];
export type RecallHit = Schemas['RecallHitOutput'];
export type RecalledMessage = Schemas['RecalledMessageOutput'];
export type LogEntry = Schemas['LogEntryOutput'];
export type LogPage = Schemas['LogPageOutput'];
export type LogVerify = Schemas['LogVerifyOutput'];
export type LogKind = Schemas['LogAppendInputKindEnum'];
export type Erasure = Schemas['ErasureOutput'];
export type ErasurePreview = Schemas['ErasurePreviewOutput'];
export type AccessRequest = Schemas['AccessRequestOutput'];
export type AuditEvent = Schemas['AuditEventOutput'];
export type AuditPage = Schemas['AuditPageOutput'];
export type ErrorOutput = Schemas['ErrorOutput'];
