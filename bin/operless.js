#!/usr/bin/env node
// The `operless` command. In a checkout of the Operless repository it runs the TypeScript
// sources directly (Node 24 strips types); installed as a package — under node_modules,
// where Node refuses to strip types — it runs the compiled JavaScript in dist/
// (`npm run build:package`, done by `npm pack` / `npm publish`).
//
// Operless needs Node.js 24. An older Node is told so, and how to get 24, before anything else
// is loaded: this file therefore uses only syntax every Node that runs ES modules parses (no
// static imports, no top-level await) and loads its modules after the check.
const REQUIRED_NODE_MAJOR = 24;
const major = Number(String(process.versions.node).split('.')[0]);

if (!(major >= REQUIRED_NODE_MAJOR)) {
  const need = REQUIRED_NODE_MAJOR;
  process.stderr.write(
    `operless: needs Node.js ${need} or newer, but this is Node.js ${process.version} (${process.execPath}).\n` +
      `  In the Operless repository: \`npx operless ...\` and \`npm start\` use the pinned Node.js ${need} in node_modules/.bin\n` +
      `  (after \`npm install\`), or put it first on PATH: export PATH="$PWD/node_modules/.bin:$PATH"\n` +
      `  Elsewhere: install Node.js ${need} (https://nodejs.org, or \`nvm install ${need}\`) and run operless again.\n`,
  );
  process.exitCode = 1;
} else {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`operless: ${err && err.stack ? err.stack : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}

async function main() {
  const fs = await import('node:fs');
  const path = await import('node:path');
  const url = await import('node:url');
  const source = new URL('../src/cli/main.ts', import.meta.url);
  const compiled = new URL('../dist/cli/main.js', import.meta.url);
  const installed = url
    .fileURLToPath(import.meta.url)
    .split(path.sep)
    .includes('node_modules');
  const entry = !installed && fs.existsSync(source) ? source : compiled;
  if (!fs.existsSync(entry)) {
    process.stderr.write(`operless: ${url.fileURLToPath(entry)} is missing: run \`npm run build:package\` in the Operless repository\n`);
    return 1;
  }
  const cli = await import(entry.href);
  return cli.run(process.argv.slice(2));
}
