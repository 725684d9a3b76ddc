// The docs' TypeScript examples run as written (scripts/pretest.mjs wrote each ```ts block of the
// "TypeScript client" section, docs/agents.md today, out as a module), against the live kindmem,
// with what `make run` prints in the environment: APP_KEY, URL and PROJECT.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { live } from './support.js';

const examples = join(dirname(fileURLToPath(import.meta.url)), '..', 'readme-examples');

async function printed(example: string): Promise<string[]> {
  const env = { ...process.env, APP_KEY: live().appKey, URL: live().url, PROJECT: live().project };
  const { stdout } = await promisify(execFile)(process.execPath, [join(examples, example)], {
    env,
  });
  return stdout.trimEnd().split('\n');
}

test('README has the three examples: the client, the seed binding, the AI SDK tools', () => {
  const found = readdirSync(examples)
    .filter((name) => /^example-\d+\.js$/.test(name))
    .sort();
  assert.deepEqual(found, ['example-1.js', 'example-2.js', 'example-3.js']);
});

test("README's client example does what it says", async () => {
  assert.deepEqual(await printed('example-1.js'), [
    "1 { text: 'Prefers email' }",
    'fact-not-found 404',
  ]);
});

test("README's binding example does what it says", async () => {
  assert.deepEqual(await printed('example-2.js'), [
    'created replayed',
    "[ { text: 'Prefers email to phone calls' } ]",
    '1 0',
  ]);
});

test("README's AI SDK example does what it says", async () => {
  assert.deepEqual(await printed('example-3.js'), [
    'Noted: I will email you about the refund.',
    "{ text: 'Prefers email, never phone calls' }",
  ]);
});
