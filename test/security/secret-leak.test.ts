/**
 * Nothing secret leaves the cluster through Operless: planted values — a Secret's data, a
 * token in a Memcached annotation, a label value, a spec value (object body content), the
 * admin's bearer token, the forwarder's ServiceAccount token, the function's client key and
 * the AWS secret key both processes hold — never appear in any log line of the forwarder or
 * the function (at debug level), in any queue message body the function received, or in
 * anything left in the work queue or the DLQ. Every message body is a bare reference (the
 * contract's fields only). The pipeline runs as separate processes under least-privilege
 * identities (test/security/pipeline.ts); the workload creates, updates and deletes objects.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { decodeMessage } from '../../src/contract/message.ts';
import { startPipeline, until, type Pipeline } from './pipeline.ts';

const rand = (prefix: string) => `${prefix}${randomBytes(12).toString('hex')}`;
const PLANTED = {
  secretData: rand('plantedsecretdata'),
  annotationToken: rand('plantedannotationtoken'),
  annotationToken2: rand('plantedrotatedtoken'),
  labelValue: rand('plantedlabel'),
  specImage: `registry.example.com/${rand('plantedimage')}:1.0`,
  awsSecret: rand('plantedawssecret'),
};

let work: string;
let p: Pipeline;
before(async () => {
  work = mkdtempSync(join(tmpdir(), 'operless-secret-leak-'));
  p = await startPipeline({ work, logLevel: 'debug', env: { AWS_SECRET_ACCESS_KEY: PLANTED.awsSecret } });
});
after(async () => {
  await p?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

async function kubectl(...args: string[]): Promise<string> {
  const r = await p.cp.kubectl(args);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

interface Mc {
  metadata: { generation: number; finalizers?: string[] };
  status?: { observedGeneration?: number };
}
async function mc(name: string): Promise<Mc | undefined> {
  const r = await p.cp.kubectl(['get', 'memcached', name, '-n', 'team-a', '-o', 'json']);
  if (r.code !== 0) return undefined;
  return JSON.parse(r.stdout) as Mc;
}
const reconciled = async (name: string) => {
  const o = await mc(name);
  return o?.status?.observedGeneration === o?.metadata.generation;
};

async function drain(queueUrl: string): Promise<string[]> {
  const sqs = p.broker.sqs();
  const bodies: string[] = [];
  for (;;) {
    const r = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60, MessageAttributeNames: ['All'] }),
    );
    if (!r.Messages?.length) return bodies;
    for (const m of r.Messages) {
      bodies.push(m.Body ?? '', JSON.stringify(m.MessageAttributes ?? {}));
      await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
    }
  }
}

test('planted secrets, tokens and object contents never reach logs or queue messages', async () => {
  const ns = 'team-a';
  await kubectl('create', 'namespace', ns);
  await kubectl('create', 'secret', 'generic', 'planted', '-n', ns, `--from-literal=password=${PLANTED.secretData}`);
  const object = (name: string, token: string, size: number) =>
    JSON.stringify({
      apiVersion: 'cache.example.com/v1alpha1',
      kind: 'Memcached',
      metadata: { name, namespace: ns, labels: { 'team-secret': PLANTED.labelValue }, annotations: { 'example.com/api-token': token } },
      spec: { size, image: PLANTED.specImage },
    });
  for (const name of ['leak-a', 'leak-b', 'leak-c']) {
    const r = await p.cp.kubectl(['apply', '-f', '-'], { input: object(name, PLANTED.annotationToken, 1) });
    assert.equal(r.code, 0, r.stderr);
  }
  await until('all three are reconciled', async () => (await Promise.all(['leak-a', 'leak-b', 'leak-c'].map(reconciled))).every(Boolean), 90_000);
  // Rotate the token (an annotation change is a trigger), resize one, delete one.
  const rotated = await p.cp.kubectl(['apply', '-f', '-'], { input: object('leak-a', PLANTED.annotationToken2, 2) });
  assert.equal(rotated.code, 0, rotated.stderr);
  await kubectl('delete', 'memcached', 'leak-c', '-n', ns, '--wait=false');
  await until(
    'leak-a is reconciled at its new generation and leak-c is gone',
    async () => (await reconciled('leak-a')) && (await mc('leak-c')) === undefined,
    90_000,
  );
  await new Promise((r) => setTimeout(r, 2000));
  await p.stopProcesses();

  const secrets: Record<string, string> = {
    ...PLANTED,
    secretDataBase64: Buffer.from(PLANTED.secretData).toString('base64'),
    forwarderToken: p.forwarderIdentity.token ?? '',
    adminToken: /token: (\S+)/.exec(p.cp.kubeconfigYaml)?.[1] ?? '',
    functionClientKey: /client-key-data: (\S+)/.exec(p.functionIdentity.kubeconfigYaml)?.[1] ?? '',
    functionClientKeyPem:
      Buffer.from(/client-key-data: (\S+)/.exec(p.functionIdentity.kubeconfigYaml)?.[1] ?? '', 'base64')
        .toString('utf8')
        .split('\n')[1] ?? '',
  };
  for (const [name, value] of Object.entries(secrets)) assert.ok(value.length >= 16, `planted ${name} is a real value`);
  const queueLeftovers = [...(await drain(p.broker.queueUrl('work'))), ...(await drain(p.broker.queueUrl('work-dlq')))];
  const bodies = p.bodies();
  const sources: Record<string, string[]> = {
    'forwarder log': p.forwarderLines,
    'function log': p.functionLines.filter((l) => !l.includes('"msg":"queue record"')),
    'queue message bodies': bodies,
    'work queue and DLQ leftovers': queueLeftovers,
    'forwarder config file': [readFileSync(join(work, 'forwarder.yaml'), 'utf8')],
  };
  const leaks: string[] = [];
  for (const [where, texts] of Object.entries(sources)) {
    for (const [name, value] of Object.entries(secrets)) {
      const hit = texts.find((t) => t.includes(value));
      if (hit) leaks.push(`${name} found in ${where}: ${hit.slice(0, 300)}`);
    }
  }
  console.log(
    `\nscanned ${p.forwarderLines.length} forwarder log lines, ${sources['function log']!.length} function log lines, ${bodies.length} queue message bodies, ${queueLeftovers.length / 2} leftover messages for ${Object.keys(secrets).length} planted values`,
  );
  assert.deepEqual(leaks, []);

  // The scan saw real traffic, and the messages are bare references.
  assert.ok(p.forwarderLines.length > 0 && sources['function log']!.length > 5, 'both processes logged');
  assert.ok(bodies.length >= 4, `the function received messages (${bodies.length})`);
  assert.ok(
    p.functionLines.some((l) => l.includes('leak-a')),
    'logs name objects by key',
  );
  for (const body of bodies) {
    const d = decodeMessage(body);
    assert.ok(d.ok, `a queue body is a valid reconcile message: ${body}`);
    assert.ok(body.length < 1024, 'a reference, not an object');
    assert.doesNotMatch(body, /"(spec|metadata|status|data|annotations|labels)"/);
  }
});
