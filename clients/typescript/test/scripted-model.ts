// A scripted language model for the AI SDK tests: the `ai` package's own mock
// (`MockLanguageModelV3` from `ai/test`), answering each call with the next turn of a script: a
// tool call, or text. No model and no network; the tools it calls run for real.

import { MockLanguageModelV3 } from 'ai/test';

// one call's answer, as the mock takes it (the provider package's type, without importing it)
type Script = NonNullable<
  NonNullable<ConstructorParameters<typeof MockLanguageModelV3>[0]>['doGenerate']
>;
type LanguageModelV3GenerateResult = Extract<Script, readonly unknown[]>[number];

export type Turn =
  | { readonly tool: string; readonly input: unknown; readonly id?: string }
  | { readonly text: string };

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

function generated(turn: Turn, n: number): LanguageModelV3GenerateResult {
  if ('text' in turn) {
    return {
      content: [{ type: 'text', text: turn.text }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      warnings: [],
    };
  }
  return {
    content: [
      {
        type: 'tool-call',
        toolCallId: turn.id ?? `call-${n + 1}`,
        toolName: turn.tool,
        input: JSON.stringify(turn.input),
      },
    ],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

export function scriptedModel(turns: readonly Turn[]): MockLanguageModelV3 {
  return new MockLanguageModelV3({ doGenerate: turns.map(generated) });
}
