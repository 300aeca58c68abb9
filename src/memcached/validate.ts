/**
 * Checks of a Memcached spec that the CRD schema cannot express. A problem found here is
 * permanent until a human edits the object, so the controller reports it as a `Degraded`
 * condition and a `TerminalError` instead of retrying.
 */
import type { MemcachedSpec } from './types.ts';
import { MEBIBYTE, parseQuantity } from './quantity.ts';

export interface SpecProblem {
  /** CamelCase reason for the condition. */
  readonly reason: string;
  /** What is wrong and what to do about it. */
  readonly message: string;
}

/** The first problem of a spec, or undefined when it can be reconciled. */
export function specProblem(spec: MemcachedSpec): SpecProblem | undefined {
  const limits = spec.resources?.limits ?? {};
  const requests = spec.resources?.requests ?? {};
  const itemBytes = spec.memoryLimitMB * MEBIBYTE;
  const memoryLimit = parseQuantity(limits.memory);
  if (memoryLimit !== undefined && itemBytes > memoryLimit) {
    return {
      reason: 'MemoryLimitTooSmall',
      message:
        `spec.memoryLimitMB is ${spec.memoryLimitMB} MiB but the container memory limit ` +
        `spec.resources.limits.memory is ${String(limits.memory)}: memcached would be OOM-killed when the cache fills. ` +
        `Lower spec.memoryLimitMB or raise spec.resources.limits.memory (allow some headroom for connections).`,
    };
  }
  for (const resource of ['memory', 'cpu']) {
    const limit = parseQuantity(limits[resource]);
    const request = parseQuantity(requests[resource]);
    if (limit !== undefined && request !== undefined && request > limit) {
      return {
        reason: 'RequestAboveLimit',
        message:
          `spec.resources.requests.${resource} (${String(requests[resource])}) is larger than spec.resources.limits.${resource} ` +
          `(${String(limits[resource])}); Kubernetes would refuse the pods. Make the request at most the limit.`,
      };
    }
  }
  return undefined;
}
