/**
 * The children a Memcached should have, computed from its spec alone (pure): a Deployment
 * running memcached with `size` replicas, and a headless Service in front of it. The
 * controller server-side applies exactly these objects, so what is written here is all the
 * operator owns — fields it does not set stay with whoever set them.
 *
 * Guarantees: the same Memcached always yields the same objects (no timestamps, no random
 * names); the pod selector uses only labels derived from the name, so it never changes (a
 * Deployment's selector is immutable); the pod runs under the "restricted" Pod Security
 * Standard (non-root, no privilege escalation, all capabilities dropped, RuntimeDefault
 * seccomp, read-only root filesystem).
 */
import type { Container, Deployment, Service } from '../kube/kinds.ts';
import type { MemcachedSettings } from './settings.ts';
import type { Memcached } from './types.ts';

/** Pod-template annotation: the hash of the settings read from `spec.configMapRef` (a change rolls the pods). */
export const CONFIG_HASH_ANNOTATION = 'cache.example.com/config-hash';

/** The settings of the referenced ConfigMap and their hash (configSettings in settings.ts). */
export interface AppliedSettings {
  readonly settings: MemcachedSettings;
  readonly hash: string;
}

export const CONTAINER_NAME = 'memcached';
export const PORT_NAME = 'memcached';
/** uid/gid of the `memcache` user in the official memcached images. */
export const MEMCACHED_UID = 11211;

/** Labels selecting the pods of one Memcached (stable for the object's lifetime). */
export function selectorLabels(mc: Memcached): Record<string, string> {
  return { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': mc.metadata.name };
}

/** `key=value,…` form of `selectorLabels`, for list requests. */
export function podSelector(mc: Memcached): string {
  return Object.entries(selectorLabels(mc))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

function labels(mc: Memcached): Record<string, string> {
  return { ...selectorLabels(mc), 'app.kubernetes.io/managed-by': 'operless', 'app.kubernetes.io/component': 'cache' };
}

/** The memcached command line: item memory (`-m`, MiB; the ConfigMap's wins), port (`-p`), and the ConfigMap's max connections (`-c`). */
export function memcachedArgs(mc: Memcached, settings: MemcachedSettings = {}): string[] {
  return [
    '-m',
    String(settings.memoryLimitMB ?? mc.spec.memoryLimitMB),
    '-p',
    String(mc.spec.port),
    ...(settings.maxConnections !== undefined ? ['-c', String(settings.maxConnections)] : []),
  ];
}

/** The Deployment; with `applied` (a Memcached with `spec.configMapRef`), its settings and their hash on the pod template. */
export function desiredDeployment(mc: Memcached, applied?: AppliedSettings): Deployment {
  const spec = mc.spec;
  const container: Container = {
    name: CONTAINER_NAME,
    image: spec.image,
    imagePullPolicy: 'IfNotPresent',
    command: ['memcached'],
    args: memcachedArgs(mc, applied?.settings),
    ports: [{ name: PORT_NAME, containerPort: spec.port, protocol: 'TCP' }],
    readinessProbe: { tcpSocket: { port: PORT_NAME }, periodSeconds: 5, failureThreshold: 3 },
    livenessProbe: { tcpSocket: { port: PORT_NAME }, initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 3 },
    securityContext: {
      runAsNonRoot: true,
      runAsUser: MEMCACHED_UID,
      runAsGroup: MEMCACHED_UID,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
  };
  if (spec.resources && (spec.resources.limits || spec.resources.requests)) {
    container.resources = {
      ...(spec.resources.limits ? { limits: quantities(spec.resources.limits) } : {}),
      ...(spec.resources.requests ? { requests: quantities(spec.resources.requests) } : {}),
    };
  }
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: mc.metadata.name, namespace: mc.metadata.namespace, labels: labels(mc) },
    spec: {
      replicas: spec.size,
      revisionHistoryLimit: 3,
      selector: { matchLabels: selectorLabels(mc) },
      template: {
        metadata: { labels: labels(mc), ...(applied ? { annotations: { [CONFIG_HASH_ANNOTATION]: applied.hash } } : {}) },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [container],
        },
      },
    },
  };
}

/**
 * Resource quantities as the Kubernetes model types them (strings): the CRD's `int-or-string`
 * quantities (`cpu: 1`) are written as the API server would canonicalise them (`"1"`).
 */
function quantities(values: Readonly<Record<string, string | number>>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, String(value)]));
}

/** A headless Service: clients resolve every memcached pod (clients shard keys themselves). */
export function desiredService(mc: Memcached): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: mc.metadata.name, namespace: mc.metadata.namespace, labels: labels(mc) },
    spec: {
      clusterIP: 'None',
      selector: selectorLabels(mc),
      ports: [{ name: PORT_NAME, port: mc.spec.port, targetPort: PORT_NAME, protocol: 'TCP' }],
    },
  };
}
