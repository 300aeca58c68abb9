/**
 * Test doubles for unit tests of the runtime (integration tests use the real API server and
 * broker): an in-memory KubeClient with resourceVersion conflicts, a recording sender, a
 * Lambda context with a controllable clock, SQS records.
 */
import type { Context, SQSRecord } from 'aws-lambda';
import type { BoundKubeClient } from '../../../src/kube/client.ts';
import { KubeApiError } from '../../../src/kube/errors.ts';
import type { KindRef, KubeObject } from '../../../src/kube/types.ts';
import type { MessageSender, OutgoingMessage } from '../../../src/queue/sender.ts';
import type { VisibilityChange } from '../../../src/queue/port.ts';

const keyOf = (kind: KindRef, name: string, namespace?: string) => `${kind.apiVersion}/${kind.plural}/${namespace ?? ''}/${name}`;
const clone = <T>(v: T): T => structuredClone(v);

export interface FakeCluster {
  client: BoundKubeClient;
  objects: Map<string, KubeObject>;
  requests: string[];
  put(kind: KindRef, object: KubeObject): KubeObject;
  read(kind: KindRef, name: string, namespace?: string): KubeObject | undefined;
  /** Makes the next requests matching `verb` fail with this error. */
  failNext(verb: string, error: Error, times?: number): void;
}

export function fakeCluster(): FakeCluster {
  const objects = new Map<string, KubeObject>();
  const requests: string[] = [];
  const failures: { verb: string; error: Error; times: number }[] = [];
  let rv = 100;
  let uid = 0;
  const maybeFail = (verb: string) => {
    const f = failures.find((x) => x.verb === verb && x.times > 0);
    if (f) {
      f.times--;
      throw f.error;
    }
  };
  const store = (kind: KindRef, object: KubeObject) => {
    const o = clone(object);
    o.metadata.resourceVersion = String(++rv);
    objects.set(keyOf(kind, o.metadata.name, o.metadata.namespace), o);
    return clone(o);
  };
  const notFound = (kind: KindRef, name: string) =>
    new KubeApiError({ status: 404, reason: 'NotFound', message: `${kind.plural} "${name}" not found`, request: 'x' });
  const client: BoundKubeClient = {
    fieldManager: 'test',
    transport: undefined as never,
    with: () => client,
    async get(kind, name, namespace) {
      requests.push(`get ${kind.kind} ${name}`);
      maybeFail('get');
      const o = objects.get(keyOf(kind, name, namespace));
      return o ? (clone(o) as never) : undefined;
    },
    async list(kind, opts = {}) {
      requests.push(`list ${kind.kind}`);
      const items = [...objects.entries()].filter(([k]) => k.startsWith(`${kind.apiVersion}/${kind.plural}/${opts.namespace ?? ''}`)).map(([, o]) => clone(o));
      return { items: items as never[], resourceVersion: String(rv) };
    },
    async apply(kind, object) {
      requests.push(`apply ${kind.kind} ${object.metadata.name}`);
      maybeFail('apply');
      const existing = objects.get(keyOf(kind, object.metadata.name, object.metadata.namespace));
      return store(kind, {
        ...existing,
        ...clone(object),
        metadata: { ...existing?.metadata, ...clone(object.metadata), uid: existing?.metadata.uid ?? `uid-${++uid}` },
      }) as never;
    },
    async applyStatus(kind, object) {
      requests.push(`applyStatus ${kind.kind} ${object.metadata.name}`);
      maybeFail('applyStatus');
      const existing = objects.get(keyOf(kind, object.metadata.name, object.metadata.namespace));
      if (!existing) throw notFound(kind, object.metadata.name);
      return store(kind, { ...existing, status: clone(object.status) }) as never;
    },
    async mergePatch(kind, name, namespace, patch) {
      requests.push(`mergePatch ${kind.kind} ${name} ${JSON.stringify(patch)}`);
      maybeFail('mergePatch');
      const existing = objects.get(keyOf(kind, name, namespace));
      if (!existing) throw notFound(kind, name);
      const p = patch as { metadata?: { resourceVersion?: string; finalizers?: string[]; annotations?: Record<string, string | null> } } & Record<
        string,
        unknown
      >;
      if (p.metadata?.resourceVersion && p.metadata.resourceVersion !== existing.metadata.resourceVersion) {
        throw new KubeApiError({ status: 409, reason: 'Conflict', message: 'the object has been modified', request: 'PATCH' });
      }
      const { metadata, ...rest } = p;
      const annotations = metadata?.annotations
        ? Object.fromEntries(Object.entries({ ...existing.metadata.annotations, ...metadata.annotations }).filter((e): e is [string, string] => e[1] !== null))
        : undefined;
      const next = {
        ...existing,
        ...clone(rest),
        metadata: { ...existing.metadata, ...(metadata?.finalizers ? { finalizers: metadata.finalizers } : {}), ...(annotations ? { annotations } : {}) },
      };
      if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
        objects.delete(keyOf(kind, name, namespace));
        return clone(next) as never;
      }
      return store(kind, next) as never;
    },
    async delete(kind, name, namespace) {
      requests.push(`delete ${kind.kind} ${name}`);
      objects.delete(keyOf(kind, name, namespace));
    },
    async create(kind, object) {
      requests.push(`create ${kind.kind} ${object.metadata.name}`);
      maybeFail('create');
      if (objects.has(keyOf(kind, object.metadata.name, object.metadata.namespace))) {
        throw new KubeApiError({ status: 409, reason: 'AlreadyExists', message: 'exists', request: 'POST' });
      }
      return store(kind, { ...clone(object), metadata: { ...clone(object.metadata), uid: `uid-${++uid}` } }) as never;
    },
  };
  return {
    client,
    objects,
    requests,
    put: (kind, object) => store(kind, { ...object, metadata: { uid: `uid-${++uid}`, generation: 1, ...object.metadata } }),
    read: (kind, name, namespace) => {
      const o = objects.get(keyOf(kind, name, namespace));
      return o ? clone(o) : undefined;
    },
    failNext: (verb, error, times = 1) => {
      failures.push({ verb, error, times });
    },
  };
}

export interface Sent extends OutgoingMessage {
  queueUrl: string;
}

export function recordingSender(): MessageSender & {
  sent: Sent[];
  failFor: Set<string>;
  visibility: { queueUrl: string; entries: readonly VisibilityChange[] }[];
} {
  const sent: Sent[] = [];
  const failFor = new Set<string>();
  const visibility: { queueUrl: string; entries: readonly VisibilityChange[] }[] = [];
  return {
    sent,
    failFor,
    visibility,
    async send(queueUrl, message) {
      if (failFor.has(queueUrl)) throw new Error(`queue ${queueUrl} unreachable`);
      sent.push({ queueUrl, ...message });
    },
    async changeVisibility(queueUrl, entries) {
      visibility.push({ queueUrl, entries });
    },
  };
}

export function lambdaContext(remainingMs: () => number = () => 60_000): Context {
  return {
    awsRequestId: 'req-1',
    functionName: 'f',
    functionVersion: '1',
    invokedFunctionArn: 'arn',
    memoryLimitInMB: '512',
    logGroupName: 'g',
    logStreamName: 's',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: remainingMs,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

let nextId = 0;
export function sqsRecord(body: string, receiveCount = 1): SQSRecord {
  return {
    messageId: `msg-${++nextId}`,
    receiptHandle: `rh-${nextId}`,
    body,
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:work',
    awsRegion: 'eu-west-1',
    messageAttributes: {},
    attributes: { ApproximateReceiveCount: String(receiveCount), SentTimestamp: '0', SenderId: 'x', ApproximateFirstReceiveTimestamp: '0' },
  };
}
