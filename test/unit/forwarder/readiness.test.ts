/** The readiness decision (src/forwarder/control/readiness.ts) and leadership terms (control/term.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { healthOf, readinessOf, type ForwarderState } from '../../../src/forwarder/control/readiness.ts';
import { LeadershipTerm } from '../../../src/forwarder/control/term.ts';

const running: ForwarderState = { fatal: undefined, started: true, stopping: false, leading: true, unsyncedPaths: [], laneReasons: [] };

test('a started, synced leader with healthy lanes is ready; health fails only on a fatal error', () => {
  assert.deepEqual(readinessOf(running), { ok: true, reasons: [] });
  assert.deepEqual(healthOf(undefined), { ok: true, reasons: [] });
  assert.deepEqual(healthOf('startup failed: x'), { ok: false, reasons: ['startup failed: x'] });
});

test('every reason is named, in a fixed order: fatal, starting, stopping, unsynced watches (leader only), the lanes', () => {
  const all = readinessOf({
    fatal: 'startup failed: x',
    started: false,
    stopping: true,
    leading: true,
    unsyncedPaths: ['/api/v1/configmaps', '/apis/apps/v1/deployments'],
    laneReasons: ['queue unreachable: q'],
  });
  assert.deepEqual(all.reasons, [
    'startup failed: x',
    'starting: resolving watches and the leader election',
    'shutting down',
    'watches not synced yet: /api/v1/configmaps, /apis/apps/v1/deployments',
    'queue unreachable: q',
  ]);
  assert.equal(all.ok, false);
  assert.deepEqual(
    readinessOf({ ...running, leading: false, unsyncedPaths: ['/api/v1/configmaps'] }).reasons,
    [],
    'a follower does not wait for watches it does not run',
  );
});

test('a term: untilSynced resolves on sync, on losing leadership and on stopping, whichever comes first', async () => {
  const term = new LeadershipTerm();
  await term.untilSynced(() => new Promise(() => {})); // not leading: nothing to wait for
  term.begin();
  assert.equal(term.leading, true);
  await term.untilSynced(() => Promise.resolve());
  const never = term.untilSynced(() => new Promise(() => {}));
  term.end('lost');
  await never;
  assert.equal(term.leading, false);
  term.begin();
  const stopping = term.untilSynced(() => new Promise(() => {}));
  term.end('stopping');
  await stopping;
  assert.equal(term.stopping, true);
  assert.equal(term.leading, true, 'stopping keeps the leader leading until it flushed');
  term.stopped();
  assert.equal(term.leading, false);
});

test('webhook readiness is its own: serving and not draining, whatever the queues and watches say', async () => {
  const { webhookReadinessOf } = await import('../../../src/forwarder/control/readiness.ts');
  assert.deepEqual(webhookReadinessOf({ fatal: undefined, serving: true, draining: false }), { ok: true, reasons: [] });
  assert.deepEqual(webhookReadinessOf({ fatal: undefined, serving: false, draining: false }).reasons, ['starting: the webhook endpoint is not serving yet']);
  assert.deepEqual(webhookReadinessOf({ fatal: undefined, serving: true, draining: true }).reasons, [
    'shutting down: the webhook endpoint drains its requests before it closes',
  ]);
  assert.equal(webhookReadinessOf({ fatal: 'startup failed: x', serving: true, draining: false }).ok, false);
});
