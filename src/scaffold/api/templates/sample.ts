/**
 * Templates of a kind's samples: `infra/samples/<kind>.yaml` (an object to `kubectl apply`) and
 * `events/<kind>-added.json` (an SQS event with the reconcile message the forwarder sends about
 * it). Both in the project's first namespace in namespace-scoped mode. Pure.
 */
import { stringify } from 'yaml';
import { kebab } from '../../names.ts';
import type { ApiEntry, ProjectFile } from '../../project-file.ts';

export function sampleName(api: ApiEntry): string {
  return `${kebab(api.kind)}-sample`;
}

/** Where the sample lives: `default`, or the first namespace of a namespace-scoped project. */
export function sampleNamespace(project: ProjectFile): string {
  return project.namespaces?.[0] ?? 'default';
}

export function sample(api: ApiEntry, namespace: string): string {
  return `# A sample ${api.kind}: \`kubectl apply -f infra/samples/${kebab(api.kind)}.yaml\`, then
# \`kubectl get ${api.plural}\` and \`kubectl wait --for=condition=Ready ${api.kind.toLowerCase()}/${sampleName(api)}\`.
${stringify({
  apiVersion: `${api.group}/${api.version}`,
  kind: api.kind,
  metadata: { name: sampleName(api), ...(api.namespaced ? { namespace } : {}) },
  spec: { message: 'hello' },
})}`;
}

export function sampleEvent(project: string, api: ApiEntry, namespace: string): string {
  const body = {
    v: 1,
    cluster: 'default',
    apiVersion: `${api.group}/${api.version}`,
    kind: api.kind,
    ...(api.namespaced ? { namespace } : {}),
    name: sampleName(api),
    reason: 'Added',
    observedAt: 1767225600000,
    attempt: 0,
  };
  const event = {
    Records: [
      {
        messageId: '00000000-0000-4000-8000-000000000001',
        receiptHandle: 'sample-receipt-handle',
        body: JSON.stringify(body),
        attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: '1767225600100',
          SenderId: 'operless-forwarder',
          ApproximateFirstReceiveTimestamp: '1767225600120',
        },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: `arn:aws:sqs:us-east-1:123456789012:${project}-dev-${kebab(api.kind)}`,
        awsRegion: 'us-east-1',
      },
    ],
  };
  return `${JSON.stringify(event, null, 2)}\n`;
}
