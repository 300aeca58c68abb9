import { test } from 'node:test';
import assert from 'node:assert/strict';
import { notReconciled, renderStatus, statusExitCode, type KindStatus, type StatusReport } from '../../../src/cli/commands/status.ts';
import type { KubeObject } from '../../../src/kube/types.ts';

const obj = (generation: number | undefined, status?: Record<string, unknown>): KubeObject => ({
  apiVersion: 'cache.example.com/v1alpha1',
  kind: 'Memcached',
  metadata: { name: 'a', namespace: 'default', ...(generation === undefined ? {} : { generation }) },
  ...(status ? { status } : {}),
});

test('an object is not reconciled until status.observedGeneration reaches metadata.generation', () => {
  assert.equal(notReconciled(obj(1)), true, 'no status at all');
  assert.equal(notReconciled(obj(1, {})), true, 'status without observedGeneration');
  assert.equal(notReconciled(obj(3, { observedGeneration: 2 })), true);
  assert.equal(notReconciled(obj(3, { observedGeneration: 3 })), false);
  assert.equal(notReconciled(obj(3, { observedGeneration: '3' })), true, 'a non-number is not an observation');
  assert.equal(notReconciled(obj(undefined)), false, 'kinds without generations are not judged');
});

const queue = { url: 'http://127.0.0.1:1/000000000000/work', visible: 2, inFlight: 1, delayed: 3, oldestMessageAge: 'n/a for this broker' };

test('the exit code is 1 for a failed section or a forwarder that is not ready; skipped sections are fine', () => {
  const base: StatusReport = {
    queue: { state: 'ok', value: queue },
    dlq: { state: 'skipped', hint: 'not configured' },
    forwarder: { state: 'ok', value: { url: 'http://f', ready: true, reasons: [], metrics: {} } },
    objects: { state: 'ok', value: [] },
  };
  assert.equal(statusExitCode(base), 0);
  assert.equal(statusExitCode({ ...base, dlq: { state: 'error', error: 'boom' } }), 1);
  assert.equal(
    statusExitCode({ ...base, forwarder: { state: 'ok', value: { url: 'http://f', ready: false, reasons: ['queue unreachable'], metrics: {} } } }),
    1,
  );
});

test('the report shows depths, forwarder reasons, names of objects not reconciled, hints and errors', () => {
  const text = renderStatus({
    queue: { state: 'ok', value: queue },
    dlq: { state: 'ok', value: { ...queue, visible: 1, inFlight: 0, delayed: 0 } },
    forwarder: {
      state: 'ok',
      value: { url: 'http://f', ready: false, reasons: ['watches not synced yet: /apis/x'], metrics: { operless_forwarder_leader: 1 } },
    },
    objects: {
      state: 'ok',
      value: [
        {
          kind: 'Memcached',
          apiVersion: 'cache.example.com/v1alpha1',
          total: 5,
          notReconciled: 3,
          names: ['default/a (generation 2, observed 1)'],
          listedIn: ['all namespaces'],
          forbidden: [],
        },
      ],
    },
  });
  assert.match(text, /^queue\s+2 visible, 1 in flight, 3 delayed/m);
  assert.match(text, /oldest message age: n\/a for this broker/);
  assert.match(text, /operless dlq list/, 'a non-empty DLQ points at dlq list');
  assert.match(text, /✘ not ready/);
  assert.match(text, /watches not synced yet/);
  assert.match(text, /leader 1, buffered \?/);
  assert.match(text, /Memcached: 5 total, 3 not yet reconciled/);
  assert.match(text, /default\/a \(generation 2, observed 1\)/);
  assert.match(text, /… and 2 more/);
  const other = renderStatus({
    queue: { state: 'error', error: 'no such queue' },
    dlq: { state: 'skipped', hint: 'not configured: pass --dlq-url' },
    forwarder: { state: 'skipped', hint: 'not configured' },
    objects: { state: 'skipped', hint: 'no CRDs' },
  });
  assert.match(other, /^queue\s+✘ no such queue/m);
  assert.match(other, /^dlq\s+– not configured: pass --dlq-url/m);
});

test('namespace-scoped: a forbidden namespace is named with what to do, the others are counted, and the exit code is 1', () => {
  const report: StatusReport = {
    queue: { state: 'skipped', hint: 'not configured' },
    dlq: { state: 'skipped', hint: 'not configured' },
    forwarder: { state: 'skipped', hint: 'not configured' },
    objects: {
      state: 'ok',
      value: [
        {
          kind: 'Memcached',
          apiVersion: 'cache.example.com/v1alpha1',
          total: 2,
          notReconciled: 0,
          names: [],
          listedIn: ['team-a', 'team-c'],
          forbidden: ['team-b'],
        },
      ],
    },
  };
  const text = renderStatus(report);
  assert.match(text, /Memcached: 2 total, 0 not yet reconciled at their current generation \(in team-a, team-c\)/);
  assert.match(text, /✘ forbidden \(403\) in team-b: not counted; grant this identity list there/);
  assert.equal(statusExitCode(report), 1);
  const wide = renderStatus({
    ...report,
    objects: { state: 'ok', value: [{ ...(report.objects as { value: KindStatus[] }).value[0]!, listedIn: [], forbidden: ['all namespaces'] }] },
  });
  assert.match(wide, /forbidden \(403\) in all namespaces: not counted; a namespace-scoped install\? pass --namespaces/);
});

test('the bulk queue is listed when known, under the work queue, and fails the exit code like any queue', () => {
  const depth = { url: 'http://q/bulk', visible: 2500, inFlight: 20, delayed: 0, oldestMessageAge: 'n/a for this broker' };
  const report: StatusReport = {
    queue: { state: 'ok', value: { ...depth, url: 'http://q/work', visible: 0, inFlight: 1 } },
    dlq: { state: 'skipped', hint: 'not configured' },
    bulk: { state: 'ok', value: depth },
    forwarder: { state: 'skipped', hint: 'not configured' },
    objects: { state: 'skipped', hint: 'no CRDs' },
  };
  const text = renderStatus(report);
  assert.match(text, /^queue\s+0 visible, 1 in flight.*\n.*\nbulk queue\s+2500 visible, 20 in flight, 0 delayed {2}\(http:\/\/q\/bulk\)/m);
  assert.equal(statusExitCode(report), 0);
  assert.equal(statusExitCode({ ...report, bulk: { state: 'error', error: 'no such queue' } }), 1);
  assert.doesNotMatch(renderStatus({ ...report, bulk: undefined }), /bulk queue/);
});
