import { test } from 'node:test';
import assert from 'node:assert/strict';
import { groupReviews, redriveCheck, renderChecks } from '../../../src/cli/commands/doctor.ts';
import type { PermissionCheck } from '../../../src/cli/rbac.ts';

const check = (verb: string, resource: string, group = '', subresource?: string): PermissionCheck => ({
  group, resource, verb, source: 'infra/rbac/fn.yaml ClusterRole fn', ...(subresource ? { subresource } : {}),
});

test('reviews are grouped per resource; a failure names the missing verbs, what is there, and the RBAC file to apply', () => {
  const results = groupReviews([
    { check: check('get', 'memcacheds', 'cache.example.com'), allowed: true },
    { check: check('patch', 'memcacheds', 'cache.example.com'), allowed: false, reason: 'no RBAC policy matched' },
    { check: check('patch', 'memcacheds', 'cache.example.com', 'status'), allowed: true },
    { check: check('list', 'pods'), allowed: true },
  ]);
  assert.deepEqual(results.map((r) => [r.name, r.state]), [
    ['permission on memcacheds.cache.example.com', 'fail'],
    ['permission on memcacheds/status.cache.example.com', 'pass'],
    ['permission on pods', 'pass'],
  ]);
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
  assert.equal(text, [
    '✔ cluster reachable: https://x',
    '✘ permission on pods: missing list',
    '    fix: apply it',
    '✘ permission on services: missing create',
    '    fix: as above',
    '– EKS token: not set',
    '',
    '2 check(s) failed.',
    '',
  ].join('\n'));
  assert.match(renderChecks([{ name: 'a', state: 'pass', detail: 'b' }]), /All checks passed\./);
});
