/**
 * Template of `test/<kind>-webhook.test.ts`: each route of the kind's webhooks as the
 * forwarder invokes it, without a cluster. Pure.
 */
import { camel, kebab } from '../../names.ts';
import type { ApiEntry, WebhookEntry } from '../../project-file.ts';

export function webhookTest(api: ApiEntry, webhook: WebhookEntry): string {
  const k = api.kind;
  const hub = `${api.group}/${api.version}`;
  const namespace = api.namespaced ? ", namespace: 'default'" : '';
  const cases: string[] = [];
  if (webhook.defaulting) {
    cases.push(`test('${k} defaulting: a missing spec.message is filled in (a JSON patch)', async () => {
  const response = responseOf(await handler({ route: 'default', review: admission({}) }));
  assert.equal(response.allowed, true);
  assert.deepEqual(JSON.parse(Buffer.from(String(response.patch), 'base64').toString('utf8')), [{ op: 'add', path: '/spec/message', value: 'hello' }]);
});`);
  }
  if (webhook.validation) {
    cases.push(`test('${k} validation: a blank spec.message is denied with the message kubectl prints', async () => {
  const response = responseOf(await handler({ route: 'validate', review: admission({ message: ' ' }) }));
  assert.equal(response.allowed, false);
  assert.match(String((response.status as { message?: string }).message), /spec\\.message must not be blank/);
  assert.equal(responseOf(await handler({ route: 'validate', review: admission({ message: 'hi' }) })).allowed, true);
});`);
  }
  if (webhook.spoke) {
    cases.push(`test('${k} conversion: ${webhook.spoke} to the hub and back keeps the object', async () => {
  const spoke = { ...object({ message: 'hi' }), apiVersion: '${api.group}/${webhook.spoke}' };
  const review = (desiredAPIVersion: string, objects: unknown[]) => ({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'test-uid', desiredAPIVersion, objects } });
  const toHub = responseOf(await handler({ route: 'convert', review: review('${hub}', [spoke]) }));
  const [hub] = toHub.convertedObjects as { apiVersion: string }[];
  assert.equal(hub?.apiVersion, '${hub}');
  const back = responseOf(await handler({ route: 'convert', review: review('${api.group}/${webhook.spoke}', [hub]) }));
  assert.deepEqual(back.convertedObjects, [spoke]);
});`);
  }
  return `/**
 * The ${k} webhooks as the forwarder invokes them (src/${kebab(k)}/webhook.ts): an AdmissionReview or
 * ConversionReview in, the review the API server gets out. No cluster needed; change these cases
 * with your handlers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toWebhookHandler, type WebhookResult } from 'operless';
import { ${camel(k)}Webhook } from '../src/${kebab(k)}/webhook.ts';

// No cluster in these tests: a handler that reads through ctx.client is denied with this
// message (give it a control plane instead: startControlPlane from operless/testing).
const handler = toWebhookHandler(${camel(k)}Webhook, { clients: async () => { throw new Error('no cluster in these tests'); } });
const object = (spec: Record<string, unknown>) => ({ apiVersion: '${hub}', kind: '${k}', metadata: { name: 'sample'${namespace} }, spec });
const admission = (spec: Record<string, unknown>) => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: { uid: 'test-uid', kind: { group: '${api.group}', version: '${api.version}', kind: '${k}' }, operation: 'CREATE', name: 'sample'${namespace}, object: object(spec), userInfo: {} },
});
function responseOf(result: WebhookResult): Record<string, unknown> {
  assert.ok('review' in result, \`no review: \${JSON.stringify(result)}\`);
  return (result.review as { response: Record<string, unknown> }).response;
}

${cases.join('\n\n')}
`;
}
