import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClientFactory, sourceFromEnv, UnknownClusterError, KubeAccessError, loadSsmParameter } from '../../../src/kube/factory.ts';

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: abc } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

test('source precedence: inline, file, SSM, EKS, in-cluster', () => {
  const all = {
    OPERLESS_KUBECONFIG_INLINE: 'yaml',
    OPERLESS_KUBECONFIG: '/a',
    KUBECONFIG: '/b:/c',
    OPERLESS_KUBECONFIG_SSM_PARAMETER: '/p',
    OPERLESS_EKS_CLUSTER: 'prod',
    AWS_REGION: 'eu-west-1',
    KUBERNETES_SERVICE_HOST: '10.0.0.1',
  };
  assert.deepEqual(sourceFromEnv(all), { type: 'inline', kubeconfig: 'yaml' });
  assert.deepEqual(sourceFromEnv({ ...all, OPERLESS_KUBECONFIG_INLINE: undefined }), { type: 'file', path: '/a' });
  assert.deepEqual(sourceFromEnv({ ...all, OPERLESS_KUBECONFIG_INLINE: undefined, OPERLESS_KUBECONFIG: undefined }), { type: 'file', path: '/b' });
  assert.deepEqual(sourceFromEnv({ OPERLESS_KUBECONFIG_SSM_PARAMETER: '/p', OPERLESS_EKS_CLUSTER: 'x' }), { type: 'ssm', parameter: '/p' });
  assert.deepEqual(sourceFromEnv({ OPERLESS_EKS_CLUSTER: 'prod', AWS_DEFAULT_REGION: 'us-east-1' }), { type: 'eks', cluster: 'prod', region: 'us-east-1' });
  assert.deepEqual(sourceFromEnv({ KUBERNETES_SERVICE_HOST: '10.0.0.1' }), { type: 'inCluster' });
});

test('no source: an error listing the variables to set', () => {
  assert.throws(
    () => sourceFromEnv({}),
    (err: Error) => err instanceof KubeAccessError && /OPERLESS_KUBECONFIG/.test(err.message) && /OPERLESS_EKS_CLUSTER/.test(err.message),
  );
});

test('one client per cluster, cached across calls', async () => {
  const factory = createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: KUBECONFIG } });
  const a = await factory('c1');
  assert.equal(await factory('c1'), a);
  assert.equal(a.transport.server, 'https://127.0.0.1:1');
  await a.transport.close();
});

test("without OPERLESS_CLUSTER, every cluster id a message names shares the environment's one client (the cache does not grow with message content)", async () => {
  const factory = createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: KUBECONFIG } });
  const first = await factory('c1');
  for (let i = 0; i < 50; i++) assert.equal(await factory(`other-${i}`), first);
  assert.equal((await factory('c1')).transport, first.transport);
  await first.transport.close();
});

test('explicit sources: one client per configured cluster, reused', async () => {
  const factory = createClientFactory({ sources: { a: { type: 'inline', kubeconfig: KUBECONFIG }, b: { type: 'inline', kubeconfig: KUBECONFIG } }, env: {} });
  const a = await factory('a');
  const b = await factory('b');
  assert.notEqual(a.transport, b.transport);
  assert.equal(await factory('a'), a);
  assert.equal(await factory('b'), b);
  await assert.rejects(factory('c'), UnknownClusterError);
  await Promise.all([a.transport.close(), b.transport.close()]);
});

test('OPERLESS_CLUSTER: a message for another cluster is refused, naming both', async () => {
  const factory = createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: KUBECONFIG, OPERLESS_CLUSTER: 'prod' } });
  await assert.rejects(
    factory('staging'),
    (err: Error) => err instanceof UnknownClusterError && /cluster "staging".*OPERLESS_CLUSTER="prod"/.test(err.message),
  );
});

test('kubeconfig from SSM (loader injected), bad kubeconfig explained', async () => {
  const ok = createClientFactory({ env: { OPERLESS_KUBECONFIG_SSM_PARAMETER: '/k' }, loadSsmParameter: async (n) => (n === '/k' ? KUBECONFIG : '') });
  assert.equal((await ok('c')).transport.server, 'https://127.0.0.1:1');
  const bad = createClientFactory({
    env: { OPERLESS_KUBECONFIG_SSM_PARAMETER: '/k' },
    loadSsmParameter: async () => {
      throw new Error('AccessDenied');
    },
  });
  await assert.rejects(bad('c'), /could not load the kubeconfig \(SSM parameter \/k\): AccessDenied/);
});

test('a failed build is retried on the next call (not cached)', async () => {
  let calls = 0;
  const factory = createClientFactory({
    env: { OPERLESS_KUBECONFIG_SSM_PARAMETER: '/k' },
    loadSsmParameter: async () => {
      calls++;
      if (calls === 1) throw new Error('throttled');
      return KUBECONFIG;
    },
  });
  await assert.rejects(factory('c'));
  await new Promise((r) => setImmediate(r));
  assert.ok(await factory('c'));
});

test('EKS source uses the injected access (endpoint + token provider)', async () => {
  const { eksEndpoint } = await import('../../../src/kube/eks.ts');
  const factory = createClientFactory({
    env: { OPERLESS_EKS_CLUSTER: 'prod', AWS_REGION: 'eu-west-1' },
    eks: async (cluster, region) => {
      assert.equal(cluster, 'prod');
      assert.equal(region, 'eu-west-1');
      return eksEndpoint(
        { endpoint: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com', caData: Buffer.from('pem').toString('base64') },
        async () => 'k8s-aws-v1.x',
      );
    },
  });
  assert.equal((await factory('prod')).transport.server, 'https://ABC.gr7.eu-west-1.eks.amazonaws.com');
});

test('loadSsmParameter without @aws-sdk/client-ssm (a container image): says what to install, naming the parameter', async () => {
  await assert.rejects(loadSsmParameter('/operless/kubeconfig', '@aws-sdk/client-ssm-not-installed'), (err: Error) => {
    assert.ok(err instanceof KubeAccessError);
    assert.match(err.message, /cannot read the kubeconfig parameter \/operless\/kubeconfig: @aws-sdk\/client-ssm-not-installed is not available/);
    assert.match(err.message, /container image must install it/);
    return true;
  });
});
