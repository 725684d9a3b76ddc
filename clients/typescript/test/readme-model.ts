// README's AI SDK example imports `model` from './model.js' ("any AI SDK model"): the test copies
// this file there. It is the AI SDK's mock model, scripted to call `remember` once and answer.

import { scriptedModel } from '../test/scripted-model.js';

export const model = scriptedModel([
  { tool: 'remember', input: { type: 'preference', text: 'Prefers email, never phone calls' } },
  { text: 'Noted: I will email you about the refund.' },
]);
