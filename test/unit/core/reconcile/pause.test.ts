/**
 * pause.ts: whether a reconcile runs for an object, and what it writes at a pause transition;
 * followup.ts: a paused outcome sends nothing. The whole path on a real API server is in
 * test/integration/runtime.test.ts ("pause: …").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isPaused, PAUSED_ANNOTATION } from '../../../../src/contract/pause.ts';
import { pauseFieldManager, pauseStep } from '../../../../src/core/reconcile/pause.ts';
import { decideFollowUp } from '../../../../src/core/reconcile/followup.ts';
import { newMessage } from '../../../../src/contract/message.ts';
import { resultLabel } from '../../../../src/core/reconcile/metrics.ts';
import type { KubeObject } from '../../../../src/kube/types.ts';

function object(annotations: Record<string, string> | undefined, pausedStatus?: 'True' | 'False'): KubeObject {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Thing',
    metadata: { name: 't', namespace: 'ns', generation: 4, ...(annotations ? { annotations } : {}) },
    ...(pausedStatus
      ? {
          status: {
            conditions: [
              { type: 'Ready', status: 'True', reason: 'R', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' },
              { type: 'Paused', status: pausedStatus, reason: 'X', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' },
            ],
          },
        }
      : {}),
  };
}

test('only the exact value "true" pauses', () => {
  assert.equal(isPaused(object({ [PAUSED_ANNOTATION]: 'true' })), true);
  for (const value of ['True', 'yes', '1', '', 'false']) assert.equal(isPaused(object({ [PAUSED_ANNOTATION]: value })), false, value);
  assert.equal(isPaused(object(undefined)), false);
  assert.equal(isPaused(undefined), false);
});

test('pausing: not reconciled, a Paused=True condition for the generation and one Normal Event', () => {
  const step = pauseStep(object({ [PAUSED_ANNOTATION]: 'true' }));
  assert.equal(step.paused, true);
  assert.deepEqual(step.transition?.condition, {
    type: 'Paused',
    status: 'True',
    reason: 'PausedByAnnotation',
    message: 'operless.dev/paused is "true": not reconciled until it is removed',
    observedGeneration: 4,
  });
  assert.equal(step.transition?.event.type, 'Normal');
  assert.equal(step.transition?.event.reason, 'Paused');
});

test('already shown paused: nothing more to write', () => {
  assert.deepEqual(pauseStep(object({ [PAUSED_ANNOTATION]: 'true' }, 'True')), { paused: true });
});

test('resumed: reconciled, Paused=False with reason Resumed and a Resumed Event', () => {
  const step = pauseStep(object(undefined, 'True'));
  assert.equal(step.paused, false);
  assert.equal(step.transition?.condition.status, 'False');
  assert.equal(step.transition?.condition.reason, 'Resumed');
  assert.equal(step.transition?.event.reason, 'Resumed');
});

test('never paused, or resumed and shown so: nothing to write', () => {
  assert.deepEqual(pauseStep(object(undefined)), { paused: false });
  assert.deepEqual(pauseStep(object(undefined, 'False')), { paused: false });
});

test('the Paused condition has a field manager of its own', () => {
  assert.equal(pauseFieldManager('operless-thing'), 'operless-thing-pause');
});

test('a paused outcome sends nothing and counts as success under its own label', () => {
  const message = newMessage({ cluster: 'c', apiVersion: 'example.com/v1', kind: 'Thing', namespace: 'ns', name: 't' }, 'Requeue');
  const followUp = decideFollowUp({ message, ending: { type: 'paused' }, policy: { baseSeconds: 1, capSeconds: 2, maxAttempts: 3 }, now: 0 });
  assert.deepEqual(followUp, { type: 'none', label: 'paused' });
  assert.equal(resultLabel('paused'), 'success');
});
