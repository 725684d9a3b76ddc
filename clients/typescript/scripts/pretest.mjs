// Before `node --test`: build the package (dist/, what the tests import it as, by its name),
// write README's TypeScript examples out as modules (readme-examples/), and compile the tests
// with them (build/). Node 20 cannot run TypeScript, so the tests run as compiled.

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

for (const out of ['dist', 'build', 'readme-examples']) {
  rmSync(join(root, out), { recursive: true, force: true });
}
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });

// Each ```ts block of README's "### TypeScript client" section, in order, as example-<n>.ts.
const readme = readFileSync(join(root, '..', '..', 'README.md'), 'utf8');
const section = readme.split('\n### TypeScript client\n')[1]?.split(/\n#{2,3} /)[0];
if (section === undefined) throw new Error('README.md has no "### TypeScript client" section');
const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
if (blocks.length === 0) throw new Error("README's TypeScript section has no ```ts block");
mkdirSync(join(root, 'readme-examples'));
blocks.forEach((code, i) =>
  writeFileSync(join(root, 'readme-examples', `example-${i + 1}.ts`), code),
);
// the AI SDK example's "any AI SDK model": the SDK's mock, scripted (test/readme-model.ts)
copyFileSync(join(root, 'test', 'readme-model.ts'), join(root, 'readme-examples', 'model.ts'));

execFileSync(process.execPath, [tsc, '-p', 'tsconfig.test.json'], { cwd: root, stdio: 'inherit' });
