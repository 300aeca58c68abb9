import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { groupReviews, redriveCheck, renderChecks, reserveCheck } from '../../../src/cli/commands/doctor.ts';
import type { PermissionCheck } from '../../../src/cli/rbac.ts';

const check = (verb: string, resource: string, group = '', subresource?: string): PermissionCheck => ({
  group,
  resource,
  verb,
  source: 'infra/rbac/fn.yaml ClusterRole fn',
  ...(subresource ? { subresource } : {}),
});

test('reviews are grouped per resource; a failure names the missing verbs, what is there, and the RBAC file to apply', () => {
  const results = groupReviews([
    { check: check('get', 'memcacheds', 'cache.example.com'), allowed: true },
    { check: check('patch', 'memcacheds', 'cache.example.com'), allowed: false, reason: 'no RBAC policy matched' },
    { check: check('patch', 'memcacheds', 'cache.example.com', 'status'), allowed: true },
    { check: check('list', 'pods'), allowed: true },
  ]);
  assert.deepEqual(
    results.map((r) => [r.name, r.state]),
    [
      ['permission on memcacheds.cache.example.com', 'fail'],
      ['permission on memcacheds/status.cache.example.com', 'pass'],
      ['permission on pods', 'pass'],
    ],
  );
  assert.equal(results[0]!.detail, 'missing patch (has get) — no RBAC policy matched');
  assert.match(results[0]!.fix ?? '', /kubectl apply -f infra\/rbac\/fn\.yaml \(ClusterRole fn\)/);
  assert.equal(results[2]!.detail, 'list');
});

test('the redrive policy must point at the DLQ', () => {
  const work = { url: 'u', visible: 0, inFlight: 0, delayed: 0 };
  const dlqUrl = 'http://127.0.0.1:1/000000000000/work-dlq';
  assert.equal(redriveCheck(work, dlqUrl).state, 'fail');
  assert.match(redriveCheck(work, dlqUrl).detail, /has none/);
  const elsewhere = redriveCheck({ ...work, redrive: { deadLetterTargetArn: 'arn:aws:sqs:us-east-1:0:other-dlq', maxReceiveCount: 5 } }, dlqUrl);
  assert.equal(elsewhere.state, 'fail');
  assert.match(elsewhere.detail, /other-dlq, not to work-dlq/);
  const good = redriveCheck({ ...work, redrive: { deadLetterTargetArn: 'arn:aws:sqs:us-east-1:0:work-dlq', maxReceiveCount: 5 } }, dlqUrl);
  assert.deepEqual([good.state, good.detail], ['pass', 'after 5 receives to work-dlq']);
});

test('each check is one line with its mark; fixes follow failures, repeated ones say "as above"', () => {
  const text = renderChecks([
    { name: 'cluster reachable', state: 'pass', detail: 'https://x' },
    { name: 'permission on pods', state: 'fail', detail: 'missing list', fix: 'apply it' },
    { name: 'permission on services', state: 'fail', detail: 'missing create', fix: 'apply it' },
    { name: 'EKS token', state: 'skip', detail: 'not set' },
  ]);
  assert.equal(
    text,
    [
      '✔ cluster reachable: https://x',
      '✘ permission on pods: missing list',
      '    fix: apply it',
      '✘ permission on services: missing create',
      '    fix: as above',
      '– EKS token: not set',
      '',
      '2 check(s) failed.',
      '',
    ].join('\n'),
  );
  assert.match(renderChecks([{ name: 'a', state: 'pass', detail: 'b' }]), /All checks passed\./);
});

test("time budget: a reconcile function whose reserve is at or above its timeout fails, naming both; provider values count, a function's own win", () => {
  const yaml = (fnExtra: string) => `
provider:
  name: aws
  timeout: 20
  environment:
    OPERLESS_BUDGET_RESERVE_MS: 20000
functions:
  memcached:
    handler: functions/memcached.handler
${fnExtra}
    events:
      - sqs: { arn: !GetAtt WorkQueue.Arn }
  resync:
    handler: functions/resync.handler
    timeout: 5
`;
  const inherited = reserveCheck(yaml(''));
  assert.equal(inherited.state, 'fail');
  assert.match(inherited.detail, /function "memcached": OPERLESS_BUDGET_RESERVE_MS is 20000 ms, at or above its timeout of 20 s/);
  assert.match(String(inherited.fix), /OPERLESS_BUDGET_RESERVE_MS/);
  assert.doesNotMatch(inherited.detail, /resync/, 'the scheduled resync function has no reserve to check');
  const longer = reserveCheck(yaml('    timeout: 60'));
  assert.equal(longer.state, 'pass', longer.detail);
  assert.match(longer.detail, /memcached: timeout 60 s, reserve 20000 ms/);
  const own = reserveCheck(yaml('    environment:\n      OPERLESS_BUDGET_RESERVE_MS: "1000"'));
  assert.equal(own.state, 'pass');
  const framework = reserveCheck(
    'functions:\n  f:\n    handler: f.handler\n    environment: { OPERLESS_BUDGET_RESERVE_MS: 6000 }\n    events: [{ sqs: { arn: x } }]\n',
  );
  assert.match(framework.detail, /timeout of 6 s/, 'no timeout anywhere: the framework default of 6 s');
});

test("time budget: the repository's own serverless.yml passes", () => {
  const result = reserveCheck(readFileSync(new URL('../../../serverless.yml', import.meta.url), 'utf8'));
  assert.equal(result.state, 'pass', result.detail);
  assert.match(result.detail, /memcached: timeout 60 s, reserve default/);
});
