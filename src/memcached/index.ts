/**
 * The Memcached reference operator: the resource definition (types.ts), the controller
 * (controller.ts) and its pure parts (desired children, status, spec checks).
 */
export { MEMCACHED, MemcachedResource, DEFAULT_IMAGE, DEFAULT_PORT, DEFAULT_MEMORY_LIMIT_MB } from './types.ts';
export type { Memcached, MemcachedSpec, MemcachedStatus } from './types.ts';
export { memcachedController, MEMCACHED_FINALIZER, FIELD_MANAGER } from './controller.ts';
export { desiredDeployment, desiredService, selectorLabels, podSelector } from './desired.ts';
export { observe } from './status.ts';
export { specProblem } from './validate.ts';
export { MemcachedV1beta1Resource, type MemcachedV1beta1, type MemcachedV1beta1Spec } from './v1beta1.ts';
export { memcachedWebhook, defaultMemcached, MAX_PODS_LABEL } from './webhook.ts';
