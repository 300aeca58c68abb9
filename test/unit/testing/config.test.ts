/** Pure builders of the test environment: command lines, kubeconfig, token file, ElasticMQ config. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import {
  apiServerArgs,
  controllerList,
  controllerManagerArgs,
  createQueueAttributes,
  DEFAULT_CONTROLLERS,
  elasticMqConfig,
  elasticMqJavaArgs,
  elasticMqStorageConfig,
  etcdArgs,
  expandQueues,
  kubeconfigYaml,
  mergeFlags,
  missingQueues,
  tokenFileLine,
} from '../../../src/testing/config.ts';
import { crdListPaths, loadCrdDocuments } from '../../../src/testing/crd-install.ts';
import { planKubeAssets } from '../../../src/testing/provision.ts';

const files = {
  servingCert: '/d/pki/apiserver.crt',
  servingKey: '/d/pki/apiserver.key',
  certDir: '/d/pki',
  clientCa: '/d/pki/ca.crt',
  tokenFile: '/d/pki/tokens.csv',
  serviceAccountPublicKey: '/d/pki/sa.pub',
  serviceAccountPrivateKey: '/d/pki/sa.key',
};

test('etcd listens on loopback only, without fsync, with a matching initial cluster', () => {
  const args = etcdArgs('/d/etcd', { client: 2379, peer: 2380 });
  assert.ok(args.includes('--listen-client-urls=http://127.0.0.1:2379'));
  assert.ok(args.includes('--unsafe-no-fsync=true'));
  assert.ok(args.includes('--initial-cluster=operless-test=http://127.0.0.1:2380'));
  assert.ok(args.includes('--data-dir=/d/etcd'));
});

test('kube-apiserver gets envtest flags: RBAC, no ServiceAccount admission, token file, client CA, SA keys', () => {
  const args = apiServerArgs({ port: 6443, etcdClientPort: 2379, files });
  for (const flag of [
    '--etcd-servers=http://127.0.0.1:2379',
    '--secure-port=6443',
    '--bind-address=127.0.0.1',
    '--authorization-mode=RBAC',
    '--disable-admission-plugins=ServiceAccount',
    '--token-auth-file=/d/pki/tokens.csv',
    '--client-ca-file=/d/pki/ca.crt',
    '--service-account-issuer=https://127.0.0.1:6443/',
    '--service-account-signing-key-file=/d/pki/sa.key',
    '--watch-cache=true',
  ]) {
    assert.ok(args.includes(flag), `missing ${flag}`);
  }
  const noCache = apiServerArgs({ port: 6443, etcdClientPort: 2379, files, watchCache: false, extraArgs: ['--authorization-mode=Node,RBAC', '--v=4'] });
  assert.ok(noCache.includes('--watch-cache=false'));
  assert.equal(noCache.filter((a) => a.startsWith('--authorization-mode=')).length, 1);
  assert.ok(noCache.includes('--authorization-mode=Node,RBAC'));
  assert.ok(noCache.includes('--v=4'));
});

test('mergeFlags replaces a default by name and keeps the rest in order', () => {
  assert.deepEqual(mergeFlags(['--a=1', '--b=2', '--c'], ['--b=3', '--d=4']), ['--a=1', '--c', '--b=3', '--d=4']);
});

test('controllerList: true is GC + namespace, a list is used as given, false or absent is none', () => {
  assert.deepEqual(controllerList(true), [...DEFAULT_CONTROLLERS]);
  assert.deepEqual(controllerList(['deployment-controller']), ['deployment-controller']);
  assert.deepEqual(controllerList(false), []);
  assert.deepEqual(controllerList(undefined), []);
});

test('kube-controller-manager runs the chosen controllers without leader election', () => {
  const args = controllerManagerArgs({
    kubeconfigPath: '/d/admin.kubeconfig',
    controllers: ['garbage-collector-controller', 'namespace-controller'],
    port: 10257,
    certDir: '/d/kcm',
    serviceAccountPrivateKey: '/d/pki/sa.key',
    rootCa: '/d/pki/ca.crt',
  });
  assert.ok(args.includes('--controllers=garbage-collector-controller,namespace-controller'));
  assert.ok(args.includes('--leader-elect=false'));
  assert.ok(args.includes('--kubeconfig=/d/admin.kubeconfig'));
});

test('tokenFileLine quotes groups and refuses values that would corrupt the CSV', () => {
  assert.equal(tokenFileLine('t0k', 'admin', ['system:masters', 'g2']), 't0k,admin,admin,"system:masters,g2"\n');
  assert.throws(() => tokenFileLine('t,k', 'admin', []), /cannot contain commas/);
});

test('kubeconfigYaml: token and client-certificate users, CA data, current context', () => {
  const withToken = parse(kubeconfigYaml({ server: 'https://127.0.0.1:1', caPem: 'CA', user: 'admin', credentials: { token: 'abc' } }));
  assert.equal(withToken['current-context'], 'operless-test');
  assert.equal(withToken.clusters[0].cluster.server, 'https://127.0.0.1:1');
  assert.equal(Buffer.from(withToken.clusters[0].cluster['certificate-authority-data'], 'base64').toString(), 'CA');
  assert.deepEqual(withToken.users[0], { name: 'admin', user: { token: 'abc' } });
  const withCert = parse(kubeconfigYaml({ server: 's', caPem: 'CA', user: 'alice', credentials: { clientCertPem: 'C', clientKeyPem: 'K' } }));
  assert.equal(Buffer.from(withCert.users[0].user['client-certificate-data'], 'base64').toString(), 'C');
  assert.equal(Buffer.from(withCert.users[0].user['client-key-data'], 'base64').toString(), 'K');
  assert.equal(withCert.contexts[0].context.user, 'alice');
});

test('expandQueues adds missing DLQs first and validates names and receive counts', () => {
  const queues = expandQueues([{ name: 'work', dlq: { name: 'work-dlq', maxReceiveCount: 5 } }]);
  assert.deepEqual(
    queues.map((q) => q.name),
    ['work-dlq', 'work'],
  );
  assert.throws(() => expandQueues([{ name: 'a' }, { name: 'a' }]), /listed twice/);
  assert.throws(() => expandQueues([{ name: 'has space' }]), /not a valid SQS queue name/);
  assert.throws(() => expandQueues([{ name: 'q', dlq: { name: 'q', maxReceiveCount: 1 } }]), /its own dead-letter queue/);
  assert.throws(() => expandQueues([{ name: 'q', dlq: { name: 'd', maxReceiveCount: 0 } }]), /maxReceiveCount/);
});

test('elasticMqConfig declares the endpoint and each queue with its timings and redrive', () => {
  const conf = elasticMqConfig(9324, [{ name: 'work', visibilityTimeoutSeconds: 30, delaySeconds: 2, dlq: { name: 'work-dlq', maxReceiveCount: 5 } }]);
  assert.match(conf, /rest-sqs \{ enabled = true, bind-port = 9324, bind-hostname = "127\.0\.0\.1"/);
  assert.match(conf, /"work" \{ defaultVisibilityTimeout = 30 seconds, delay = 2 seconds, deadLettersQueue \{ name = "work-dlq", maxReceiveCount = 5 \} \}/);
  assert.match(conf, /"work-dlq" \{ {2}\}/);
  assert.ok(conf.indexOf('"work-dlq"') < conf.indexOf('"work" {'), 'the DLQ is declared before the queue that redrives to it');
  assert.throws(() => elasticMqConfig(1, [{ name: 'q', visibilityTimeoutSeconds: 1.5 }]), /whole seconds/);
});

test('ElasticMQ storage config keeps messages and queues below the broker dir', () => {
  const conf = elasticMqStorageConfig('/b');
  assert.match(conf, /^messages-storage \{ enabled = true, uri = "jdbc:h2:\/b\/messages" \}\n/);
  assert.match(conf, /\nqueues-storage \{ enabled = true, path = "\/b\/queues\.conf" \}\n$/);
});

test('elasticMqJavaArgs runs the server class from the lib folder with the config file', () => {
  const args = elasticMqJavaArgs('/lib', '/b/elasticmq.conf');
  assert.ok(args.includes('-Dconfig.file=/b/elasticmq.conf'));
  assert.deepEqual(args.slice(-3), ['-cp', '/lib/*', 'org.elasticmq.server.Main']);
});

test('createQueueAttributes: timings as strings, a redrive policy only with a DLQ ARN', () => {
  assert.deepEqual(createQueueAttributes({ name: 'q' }, undefined), {});
  assert.deepEqual(
    createQueueAttributes(
      { name: 'q', visibilityTimeoutSeconds: 30, delaySeconds: 2, receiveMessageWaitSeconds: 20, dlq: { name: 'd', maxReceiveCount: 5 } },
      'arn:d',
    ),
    {
      VisibilityTimeout: '30',
      DelaySeconds: '2',
      ReceiveMessageWaitTimeSeconds: '20',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: 'arn:d', maxReceiveCount: 5 }),
    },
  );
});

test('missingQueues: names a ListQueues answer does not list, by whole name', () => {
  const body = '<ListQueuesResult><QueueUrl>http://h/000000000000/work-dlq</QueueUrl></ListQueuesResult>';
  assert.deepEqual(missingQueues(body, ['work-dlq', 'work']), ['work']);
  assert.deepEqual(missingQueues(`${body}<QueueUrl>http://h/000000000000/work</QueueUrl>`, ['work-dlq', 'work']), []);
});

test('planKubeAssets: KUBEBUILDER_ASSETS with apiserver and etcd builds nothing more than what is missing', () => {
  const has = (names: string[]) => (path: string) => names.some((n) => path.endsWith(`/${n}`));
  assert.deepEqual(planKubeAssets(undefined, has([])), { fromAssets: {}, build: ['etcd', 'kube'] });
  assert.deepEqual(planKubeAssets('/a', has(['etcd'])), { fromAssets: {}, build: ['etcd', 'kube'] });
  assert.deepEqual(planKubeAssets('/a', has(['etcd', 'kube-apiserver'])), {
    fromAssets: { etcd: '/a/etcd', 'kube-apiserver': '/a/kube-apiserver' },
    build: ['kube'],
  });
  assert.deepEqual(planKubeAssets('/a', has(['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl'])).build, []);
});

test('loadCrdDocuments passes objects through; crdListPaths lists each served version', () => {
  const crd = {
    kind: 'CustomResourceDefinition',
    metadata: { name: 'ws.x.dev' },
    spec: { group: 'x.dev', names: { plural: 'ws' }, versions: [{ name: 'v1', served: true }, { name: 'v2', served: false }, { name: 'v3' }] },
  };
  assert.deepEqual(loadCrdDocuments(crd), [crd]);
  assert.deepEqual(crdListPaths(crd), ['/apis/x.dev/v1/ws?limit=1', '/apis/x.dev/v3/ws?limit=1']);
  assert.throws(() => loadCrdDocuments('/no/such/file.yaml'), /cannot read CRD file \/no\/such\/file\.yaml/);
});
