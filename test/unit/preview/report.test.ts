/**
 * The preview's report (src/preview/report.ts): declared timers are named with how many objects'
 * chains a reconcile would start, and never count as a change (a preview does not run them).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { previewExitCode, previewText } from '../../../src/preview/report.ts';
import type { ObjectPreview } from '../../../src/preview/run.ts';

const preview = (name: string, wouldStart: boolean): ObjectPreview => ({
  apiVersion: 'web.example.com/v1',
  kind: 'Site',
  namespace: 'default',
  name,
  result: { type: 'done' },
  changes: [],
  events: [],
  logs: [],
  timers: [{ name: 'health', everySeconds: 300, wouldStart }],
});

test('timers are named, not run: one line per declared timer with the objects whose chain a reconcile would start; no change, exit 0', () => {
  const previews = [preview('a', true), preview('b', false), preview('c', true)];
  const text = previewText(previews);
  assert.match(text, /^timer Site health every 300 s: not run by a preview; a reconcile would start its chain for 2 object\(s\)$/m);
  assert.match(text, /3 object\(s\) previewed: 0 would change, 0 would fail, 3 unchanged/);
  assert.equal(previewExitCode(previews), 0);
  assert.doesNotMatch(previewText([{ ...preview('a', false), timers: [] }]), /^timer /m, 'a controller without timers shows none');
});
