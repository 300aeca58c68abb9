/**
 * The public API report (scripts/api-report.ts) is a fresh render of the sources: every name
 * each package entry hands out, with its signature. A change to the public surface must come
 * with its docs/reference/api.md diff (`node scripts/api-report.ts --write`). The root entry
 * stays the author's small surface.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { API_REPORT_PATH, packageEntries, renderApiReport, rootNames } from '../../scripts/api-report.ts';

const report = renderApiReport();

test('docs/reference/api.md is a fresh render of the public API', () => {
  assert.equal(readFileSync(API_REPORT_PATH, 'utf8'), report, 'the public API changed: run node scripts/api-report.ts --write and commit the diff');
});

test('every package entry is in the report, and the root entry hands out at most 33 names', () => {
  for (const { entry } of packageEntries()) assert.match(report, new RegExp(`## \`${entry.replace('/', '\\/')}\` \\(\\d+ names\\)`), entry);
  const names = rootNames(report);
  assert.ok(names.length <= 33, `the root entry has ${names.length} names: ${names.join(', ')}`);
  for (const name of ['defineController', 'toSqsHandler', 'done', 'requeueAfter', 'TerminalError', 'ReconcileContext', 'defineWebhook'])
    assert.ok(names.includes(name), name);
  assert.ok(!/\/work\/|import\(/.test(report), 'no machine path or import() type in the report');
});
