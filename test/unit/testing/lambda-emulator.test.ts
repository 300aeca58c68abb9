/** Reading Lambda's REPORT and the emulator's INIT REPORT lines (testing/lambda-emulator.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { invocationTimings, parseReport } from '../../../src/testing/lambda-emulator.ts';

test('parseReport reads a cold REPORT line (Init Duration) and a warm one (none)', () => {
  assert.deepEqual(
    parseReport('REPORT RequestId: abc-1\tInit Duration: 0.23 ms\tDuration: 96.04 ms\tBilled Duration: 97 ms\tMemory Size: 256 MB\tMax Memory Used: 256 MB\t'),
    { requestId: 'abc-1', initDurationMs: 0.23, durationMs: 96.04 },
  );
  assert.deepEqual(parseReport('REPORT RequestId: abc-2\tDuration: 3.50 ms\tBilled Duration: 4 ms\t'), { requestId: 'abc-2', durationMs: 3.5 });
  assert.equal(parseReport('START RequestId: abc-2 Version: $LATEST'), undefined);
  assert.equal(parseReport('REPORT RequestId: abc-3\tBilled Duration: 4 ms'), undefined, 'no Duration: not a report');
});

test("invocationTimings takes the request's own REPORT and the INIT REPORT printed during it", () => {
  const output = [
    'START RequestId: one Version: $LATEST',
    '02 Dec 2026 03:59:32,406 [INFO] (rapid) INIT REPORT(durationMs: 94.161000)',
    'REPORT RequestId: one\tInit Duration: 0.23 ms\tDuration: 96.04 ms\t',
    'START RequestId: two Version: $LATEST',
    'REPORT RequestId: two\tDuration: 2.00 ms\t',
  ].join('\n');
  assert.deepEqual(invocationTimings(output, 'one'), { report: { requestId: 'one', initDurationMs: 0.23, durationMs: 96.04 }, runtimeInitMs: 94.161 });
  assert.deepEqual(invocationTimings(output, 'two'), { report: { requestId: 'two', durationMs: 2 }, runtimeInitMs: undefined });
  assert.deepEqual(invocationTimings(output, 'three'), { report: undefined, runtimeInitMs: undefined });
});

test('invocationOutcome: a response, or the error Lambda reports (function error, timeout, init failure)', async () => {
  const { invocationOutcome } = await import('../../../src/testing/lambda-emulator.ts');
  assert.deepEqual(invocationOutcome({ status: 200, body: '{"batchItemFailures":[]}', payload: { batchItemFailures: [] } }), {
    ok: true,
    response: { batchItemFailures: [] },
  });
  assert.deepEqual(invocationOutcome({ status: 200, body: 'null', payload: null }), { ok: true, response: null });
  assert.deepEqual(invocationOutcome({ status: 200, body: '', payload: undefined }), { ok: true, response: null });
  const thrown = invocationOutcome({ status: 200, body: '{}', payload: { errorType: 'TypeError', errorMessage: 'boom' } });
  assert.deepEqual(thrown, { ok: false, error: 'the function failed: TypeError: boom' });
  const timedOut = invocationOutcome({ status: 200, body: 'Task timed out after 5.00 seconds', payload: undefined });
  assert.equal(timedOut.ok, false);
  const initFailed = invocationOutcome({
    status: 502,
    body: '{"errorType":"TypeError","errorMessage":"bad"}',
    payload: { errorType: 'TypeError', errorMessage: 'bad' },
  });
  assert.match(initFailed.ok ? '' : initFailed.error, /status 502/);
});
