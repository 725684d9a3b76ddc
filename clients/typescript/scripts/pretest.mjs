// Before `node --test`: build the package (dist/, what the tests import it as, by its name),
// write README's TypeScript examples out as modules (readme-examples/), and compile the tests
// with them (build/). Node 20 cannot run TypeScript, so the tests run as compiled.

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

for (const out of ['dist', 'build', 'readme-examples']) {
  rmSync(join(root, out), { recursive: true, force: true });
}
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });

// Each ```ts block of the "TypeScript client" section (a heading at any level, on the one page of
// README.md or docs/*.md that has it), up to the next heading of its level or above, in order,
// as example-<n>.ts.
const repository = join(root, '..', '..');
const docs = join(repository, 'docs');
const pages = [
  join(repository, 'README.md'),
  ...readdirSync(docs)
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(docs, name)),
];
const sections = pages.flatMap((page) => {
  const text = readFileSync(page, 'utf8');
  const heading = /^(#+) TypeScript client\n/m.exec(text);
  if (heading === null) return [];
  const after = text.slice(heading.index + heading[0].length);
  const next = new RegExp(`^#{1,${heading[1].length}} `, 'm').exec(after);
  return [next === null ? after : after.slice(0, next.index)];
});
if (sections.length !== 1) {
  throw new Error(`${sections.length} pages have a "TypeScript client" section, not one`);
}
const blocks = [...sections[0].matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
if (blocks.length === 0) throw new Error('the TypeScript client section has no ```ts block');
mkdirSync(join(root, 'readme-examples'));
blocks.forEach((code, i) =>
  writeFileSync(join(root, 'readme-examples', `example-${i + 1}.ts`), code),
);
// the AI SDK example's "any AI SDK model": the SDK's mock, scripted (test/readme-model.ts)
copyFileSync(join(root, 'test', 'readme-model.ts'), join(root, 'readme-examples', 'model.ts'));

execFileSync(process.execPath, [tsc, '-p', 'tsconfig.test.json'], { cwd: root, stdio: 'inherit' });
