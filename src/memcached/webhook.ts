/**
 * The Memcached webhooks (one function, `functions/webhooks.ts`):
 *
 * - Defaulting: when `spec.resources` is not given, the container gets a memory request and
 *   limit sized from `spec.memoryLimitMB` (item memory plus headroom for connections and
 *   memcached's own structures) and a CPU request, so every pod is schedulable and not
 *   OOM-killed when the cache fills.
 * - Validation (needs reads): the namespace's label `cache.example.com/max-memcached-pods`
 *   caps the total `spec.size` of the Memcacheds in it; a create, or an update that raises
 *   `spec.size`, beyond the cap is denied with the numbers. The spec checks of validate.ts
 *   (memory versus limits) are refused here too, before they reach the controller. An update
 *   that leaves the spec as it was always passes: the controller's finalizer writes must work
 *   on objects stored before a rule existed.
 * - Conversion: v1alpha1 (the hub, storage) ↔ v1beta1: `spec.size` ↔ `spec.replicas`,
 *   everything else as it is.
 */
import { isDeepStrictEqual } from 'node:util';
import { defineWebhook, type AdmissionContext, type KindRef, type KubeObject, type Validation } from '../index.ts';
import { NAMESPACES } from '../kube/kinds.ts';
import { MEMCACHED, type Memcached } from './types.ts';
import { specProblem } from './validate.ts';

/** Namespace label: the most memcached pods (sum of `spec.size`) the namespace may ask for. */
export const MAX_PODS_LABEL = 'cache.example.com/max-memcached-pods';
/** Memory beyond `spec.memoryLimitMB` a memcached process needs (connections, hash table). */
export const MEMORY_HEADROOM_MB = 32;
export const DEFAULT_CPU_REQUEST = '100m';
const V1BETA1 = 'cache.example.com/v1beta1';

/** The defaulted object (pure): resources from memoryLimitMB when none are given. */
export function defaultMemcached(mc: Memcached): Memcached {
  if (mc.spec.resources !== undefined) return mc;
  const memory = `${mc.spec.memoryLimitMB + MEMORY_HEADROOM_MB}Mi`;
  mc.spec.resources = { requests: { cpu: DEFAULT_CPU_REQUEST, memory }, limits: { memory } };
  return mc;
}

/** The cap from a namespace label value, or undefined when absent or not a whole number ≥ 0. */
export function podCap(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,6}$/.test(value)) return undefined;
  return Number(value);
}

async function validateMemcached(mc: Memcached, ctx: AdmissionContext<Memcached>): Promise<Validation> {
  // Metadata-only updates (labels, finalizers) of an object stored before a rule existed pass.
  if (ctx.oldObject && isDeepStrictEqual(ctx.oldObject.spec, mc.spec)) return { allowed: true };
  const problem = specProblem(mc.spec);
  if (problem) return { allowed: false, message: problem.message };
  const namespace = mc.metadata.namespace ?? ctx.request.namespace;
  const previous = ctx.oldObject?.spec.size ?? 0;
  if (!namespace || mc.spec.size <= previous) return { allowed: true };
  const ns = await ctx.client.get(NAMESPACES, namespace);
  const label = ns?.metadata?.labels?.[MAX_PODS_LABEL];
  const cap = podCap(label);
  if (label !== undefined && cap === undefined)
    return { allowed: true, warnings: [`namespace ${namespace} label ${MAX_PODS_LABEL}=${JSON.stringify(label)} is not a whole number; no cap applied`] };
  if (cap === undefined) return { allowed: true };
  const others = await otherPods(ctx, namespace, mc.metadata.name);
  if (others + mc.spec.size <= cap) return { allowed: true };
  return {
    allowed: false,
    message: `namespace ${namespace} allows at most ${cap} memcached pods (label ${MAX_PODS_LABEL}); the other Memcacheds there ask for ${others}, so spec.size may be at most ${Math.max(0, cap - others)}, not ${mc.spec.size}. Lower spec.size or raise the namespace label.`,
  };
}

/** Sum of `spec.size` of the namespace's other Memcacheds (paged, bounded). */
async function otherPods(ctx: AdmissionContext<Memcached>, namespace: string, name: string | undefined): Promise<number> {
  let total = 0;
  let token: string | undefined;
  for (let page = 0; page < 100; page++) {
    const list = await ctx.client.list<Memcached>(MEMCACHED, { namespace, limit: 500, ...(token ? { continue: token } : {}) });
    for (const item of list.items) if (item.metadata.name !== name) total += Number(item.spec?.size) || 0;
    token = list.continue;
    if (!token) break;
  }
  return total;
}

function renameSpecField(object: KubeObject, from: string, to: string): KubeObject {
  const spec = { ...((object.spec as Record<string, unknown> | undefined) ?? {}) };
  if (from in spec) {
    spec[to] = spec[from];
    delete spec[from];
  }
  return { ...object, spec };
}

export const memcachedWebhook = defineWebhook<Memcached>({
  apiVersion: MEMCACHED.apiVersion,
  kind: MEMCACHED.kind,
  default: (mc) => defaultMemcached(mc),
  validate: validateMemcached,
  conversion: {
    spokes: {
      [V1BETA1]: {
        toHub: (beta) => renameSpecField(beta, 'replicas', 'size') as Memcached,
        fromHub: (alpha) => renameSpecField(alpha, 'size', 'replicas'),
      },
    },
  },
});
