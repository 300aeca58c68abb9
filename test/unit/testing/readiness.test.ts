/** One readiness loop for every test-environment component: ready, exited early, or not ready in time. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ManagedProcess } from '../../../src/testing/process.ts';
import { booleanProbe, ComponentNotReadyError, exitedBeforeReadyMessage, notReadyInTimeMessage, waitComponentReady } from '../../../src/testing/readiness.ts';

const clash = { logPattern: /address already in use/i, hint: ' A port is taken.' };

/** A process stand-in: `exit(code)` ends it; `stops` counts stop() calls. */
function fakeProcess(logTail: string): ManagedProcess & { exit(code: number | null): void; stops: number } {
  let exit: (code: number | null) => void = () => {};
  const exited = new Promise<number | null>((resolve) => (exit = resolve));
  let running = true;
  const proc = {
    name: 'fake-component',
    pgid: 1,
    logPath: '/logs/fake.log',
    exited,
    stops: 0,
    isRunning: () => running,
    async stop() {
      proc.stops++;
      running = false;
    },
    logTail: () => logTail,
    exit(code: number | null) {
      running = false;
      exit(code);
    },
  };
  return proc;
}

test('resolves once the probe reports ready, retrying a probe that throws or gives a reason', async () => {
  const proc = fakeProcess('');
  const answers: (() => true | string)[] = [
    () => {
      throw new Error('ECONNREFUSED');
    },
    () => 'HTTP 503',
    () => true,
  ];
  let calls = 0;
  await waitComponentReady(proc, async () => answers[calls++]!(), 60_000, clash);
  assert.equal(calls, 3);
  assert.equal(proc.stops, 0);
});

test('fails as soon as the process exits, naming the exit code, the log and a taken port', async () => {
  const proc = fakeProcess('listen tcp 127.0.0.1:2379: bind: address already in use');
  const waiting = waitComponentReady(proc, async () => 'not yet', 60_000, clash);
  proc.exit(1);
  await assert.rejects(waiting, (err: unknown) => {
    assert.ok(err instanceof ComponentNotReadyError);
    assert.match(
      err.message,
      /^fake-component exited \(code 1\) before it became ready\. A port is taken\. Its log is \/logs\/fake\.log; last lines:\n.*address already in use/,
    );
    return true;
  });
});

test('after the deadline it stops the process and quotes the last probe', async () => {
  const proc = fakeProcess('still starting');
  await assert.rejects(
    waitComponentReady(proc, async () => 'queues not created yet: work', 1, clash),
    (err: unknown) => {
      assert.ok(err instanceof ComponentNotReadyError);
      assert.match(
        err.message,
        /fake-component did not become ready within 0 s \(last probe: queues not created yet: work\)\. .*raise readyTimeoutMs.*\nstill starting$/s,
      );
      return true;
    },
  );
  assert.equal(proc.stops, 1);
});

test('booleanProbe: true is ready, false is not ready without a reason', async () => {
  assert.equal(await booleanProbe(async () => true)(), true);
  assert.equal(await booleanProbe(async () => false)(), '');
});

test('the messages: a port hint only when the log shows a clash; no empty "last probe"', () => {
  assert.equal(exitedBeforeReadyMessage('etcd', -1, '/l', 'panic', clash), 'etcd exited (code -1) before it became ready. Its log is /l; last lines:\npanic');
  assert.match(exitedBeforeReadyMessage('etcd', 1, '/l', 'Address already in use', clash), /ready\. A port is taken\. Its log/);
  assert.match(notReadyInTimeMessage('etcd', 60_000, '', '/l', 'tail'), /^etcd did not become ready within 60 s\. The machine/);
  assert.match(notReadyInTimeMessage('etcd', 1500, 'HTTP 500', '/l', 'tail'), /^etcd did not become ready within 2 s \(last probe: HTTP 500\)\. /);
});
