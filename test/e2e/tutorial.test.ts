/**
 * docs/tutorial.md, run the way a reader follows it, so the page cannot drift from what
 * Operless does. Each block the page marks with an HTML comment is one step, in order:
 * - `<!-- tutorial: run -->` before a `sh` block: its `$ ` lines are commands, run one by one
 *   in a shell (`cd` and `export` carry over to the next, as in a terminal); each must exit 0
 *   (`run, exits N`: N), and every line shown under a command must be a line of what it
 *   printed, numbers (times, ports, durations) and ids excepted (`run, output not checked`:
 *   nothing is compared);
 * - `<!-- tutorial: start -->`: the one command is started and left running until every line
 *   shown has been printed; `<!-- tutorial: stop -->` sends it Ctrl-C (SIGINT to its process
 *   group) and it must stop cleanly;
 * - `<!-- tutorial: write <path> -->`: the block is the file's whole new content;
 * - `<!-- tutorial: edit <path> -->` before a `diff` block: its `-` lines are replaced by its
 *   `+` lines, which must be in the file exactly once.
 * The `operless` command is this checkout's bin/operless.js; the page's `../operless` is this
 * repository staged as the package it publishes (scripts/build-package.ts), never the
 * checkout's dist/. Control planes come from the Operless test environment (~/.cache/operless).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stagePackage } from '../../scripts/build-package.ts';
import { watchProcess, type WatchedProcess } from './process-helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TUTORIAL = join(ROOT, 'docs', 'tutorial.md');

interface Step {
  readonly marker: string;
  readonly body: string;
  /** 1-based line of the marker in docs/tutorial.md, for messages. */
  readonly line: number;
}

/** The marked blocks of the page, in order. */
function steps(markdown: string): Step[] {
  const found: Step[] = [];
  const pattern = /<!-- tutorial: ([^>]+?) -->\n(?:```[a-z]*\n([\s\S]*?)```\n)?/g;
  for (const m of markdown.matchAll(pattern)) {
    found.push({ marker: (m[1] ?? '').trim(), body: m[2] ?? '', line: markdown.slice(0, m.index).split('\n').length });
  }
  return found;
}

/** Commands (`$ ` lines) with the output lines shown under each. */
function commands(body: string): { command: string; shown: string[] }[] {
  const out: { command: string; shown: string[] }[] = [];
  for (const line of body.split('\n')) {
    if (line.startsWith('$ ')) out.push({ command: line.slice(2), shown: [] });
    else if (line.trim() !== '') out.at(-1)?.shown.push(line);
  }
  return out;
}

/** A shown line as a whole-line pattern: any number stands for any number, any UUID for any. */
function linePattern(shown: string): RegExp {
  const escaped = shown.trimEnd().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const loose = escaped
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '\0')
    .replace(/\d+(?:\\\.\d+)?/g, '\\d+(?:\\.\\d+)?')
    .replaceAll('\0', '[0-9a-f-]{36}');
  return new RegExp(`^${loose}[ \\t]*$`, 'm');
}

let work: string;
let started: WatchedProcess | undefined;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'operless-tutorial-'));
  stagePackage(join(work, 'operless'));
  // `operless` on PATH, as `npm link` in a clone puts it there.
  mkdirSync(join(work, 'bin'));
  writeFileSync(join(work, 'bin', 'operless'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin', 'operless.js')}" "$@"\n`);
  chmodSync(join(work, 'bin', 'operless'), 0o755);
});
after(() => {
  const pid = started?.child.pid;
  if (pid && started?.child.exitCode === null && started.child.signalCode === null) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

test('docs/tutorial.md: every marked step runs as written and prints what the page shows', async () => {
  const { NODE_TEST_CONTEXT: _nested, ...inherited } = process.env;
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    PATH: `${join(work, 'bin')}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    npm_config_prefer_offline: 'true',
  };
  let cwd = work;
  const all = steps(readFileSync(TUTORIAL, 'utf8'));
  assert.ok(all.some((s) => s.marker === 'start') && all.some((s) => s.marker.startsWith('write ')), 'the page marks its steps');

  for (const step of all) {
    const where = `docs/tutorial.md:${step.line} (${step.marker})`;
    const [verb, ...rest] = step.marker.split(' ');
    if (verb === 'write') {
      writeFileSync(join(cwd, rest.join(' ')), step.body);
    } else if (verb === 'edit') {
      const file = join(cwd, rest.join(' '));
      const lines = step.body.split('\n');
      const from = lines
        .filter((l) => l.startsWith('-'))
        .map((l) => l.slice(1))
        .join('\n');
      const to = lines
        .filter((l) => l.startsWith('+'))
        .map((l) => l.slice(1))
        .join('\n');
      const text = readFileSync(file, 'utf8');
      assert.equal(text.split(from).length, 2, `${where}: the lines to replace are in ${file} once`);
      writeFileSync(
        file,
        text.replace(from, () => to),
      );
    } else if (verb === 'start') {
      const [only] = commands(step.body);
      assert.ok(only, `${where}: one command`);
      const child: ChildProcess = spawn('bash', ['-c', only.command], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      started = watchProcess(child, only.command);
      for (const shown of only.shown) await started.waitFor(linePattern(shown), `${where}: "${shown}"`);
    } else if (verb === 'stop') {
      assert.ok(started?.child.pid, `${where}: something was started`);
      process.kill(-started.child.pid, 'SIGINT');
      await started.exited; // npm ends by the signal it was sent: its exit code says nothing more
      assert.match(started.output(), /» stopped; nothing left running/);
    } else {
      assert.ok(step.marker.startsWith('run'), `${where}: a known marker`);
      const exits = Number(/exits (\d+)/.exec(step.marker)?.[1] ?? 0);
      const checked = !step.marker.includes('output not checked');
      for (const { command, shown } of commands(step.body)) {
        const cd = /^cd (\S+)$/.exec(command);
        const exported = /^export (\w+)=(\S+)$/.exec(command);
        if (cd?.[1]) cwd = resolve(cwd, cd[1]);
        else if (exported?.[1] && exported[2] !== undefined) env[exported[1]] = exported[2];
        else {
          const r = spawnSync('bash', ['-c', command], { cwd, env, encoding: 'utf8', timeout: 600_000 });
          const printed = `${r.stdout ?? ''}${r.stderr ?? ''}`;
          assert.equal(r.status, exits, `${where}: $ ${command}\n${printed}`);
          if (checked) for (const line of shown) assert.match(printed, linePattern(line), `${where}: $ ${command} prints "${line}"; it printed:\n${printed}`);
        }
      }
    }
  }
});
