/**
 * The Memcached webhooks function as the webhook tests run it: under its own identity (a
 * ServiceAccount in `operatorNamespace` allowed to get namespaces and list Memcacheds, nothing
 * else) behind the local Lambda Invoke API, and a Lambda client that calls it.
 */
import assert from 'node:assert/strict';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { toWebhookHandler } from '../../src/core/webhook/webhook.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { startLambdaInvokeServer, type LambdaInvokeServer } from '../../src/local/lambda-invoke-server.ts';
import { memcachedWebhook } from '../../src/memcached/webhook.ts';
import { silentLogger } from '../../src/observability/log.ts';
import type { ControlPlane } from '../../src/testing/index.ts';

export async function startMemcachedWebhookFunction(
  cp: ControlPlane,
  operatorNamespace: string,
  functionName: string,
): Promise<{ invokeServer: LambdaInvokeServer; lambda: LambdaClient }> {
  const ok = async (args: string[]) => {
    const res = await cp.kubectl(args);
    assert.equal(res.code, 0, `kubectl ${args.join(' ')} failed: ${res.stderr}`);
  };
  await ok(['create', 'clusterrole', 'memcached-webhook', '--verb=get', '--resource=namespaces']);
  await ok([
    'patch',
    'clusterrole',
    'memcached-webhook',
    '--type=json',
    '-p',
    JSON.stringify([{ op: 'add', path: '/rules/-', value: { apiGroups: ['cache.example.com'], resources: ['memcacheds'], verbs: ['list'] } }]),
  ]);
  const identity = await cp.serviceAccount(operatorNamespace, 'memcached-webhook');
  await ok(['create', 'clusterrolebinding', 'memcached-webhook', '--clusterrole=memcached-webhook', `--serviceaccount=${operatorNamespace}:memcached-webhook`]);
  const clients = createClientFactory({ env: { OPERLESS_KUBECONFIG: identity.kubeconfigPath } });
  const invokeServer = await startLambdaInvokeServer({
    functions: { [functionName]: toWebhookHandler(memcachedWebhook, { clients, log: silentLogger }) as never },
  });
  const lambda = new LambdaClient({
    endpoint: invokeServer.endpoint,
    region: 'us-east-1',
    maxAttempts: 1,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  return { invokeServer, lambda };
}
