#!/usr/bin/env node
// The `operless` command. In a checkout of the Operless repository it runs the TypeScript
// sources directly (Node 24 strips types); installed as a package — under node_modules,
// where Node refuses to strip types — it runs the compiled JavaScript in dist/
// (`npm run build:package`, done by `npm pack` / `npm publish`).
import { existsSync } from 'node:fs';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const source = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/cli/main.js', import.meta.url);
const installed = fileURLToPath(import.meta.url).split(sep).includes('node_modules');
const entry = !installed && existsSync(source) ? source : compiled;
if (!existsSync(entry)) {
  process.stderr.write(`operless: ${fileURLToPath(entry)} is missing: run \`npm run build:package\` in the Operless repository\n`);
  process.exit(1);
}
const { run } = await import(entry.href);
process.exitCode = await run(process.argv.slice(2));
