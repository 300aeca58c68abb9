/**
 * `cache.example.com/v1beta1` Memcached: served beside v1alpha1, with one real schema change —
 * `spec.size` is `spec.replicas` (as in a Deployment). v1alpha1 stays the storage version and
 * the hub of conversion (webhook.ts), so objects stored before v1beta1 existed need no
 * migration and the controller keeps reading v1alpha1. Every other spec field and the status
 * are v1alpha1's own definitions (types.ts), so the two versions cannot drift apart.
 */
import { integer, required, object, type Infer, type ResourceOf } from '../crd/index.ts';
import { MAX_SIZE, defineMemcachedVersion, memcachedSpecFields } from './types.ts';

const { size: _size, ...sharedSpecFields } = memcachedSpecFields;

export const memcachedV1beta1Spec = required(
  object(
    {
      replicas: required(
        integer({
          minimum: 0,
          maximum: MAX_SIZE,
          description: 'Number of memcached nodes (Deployment replicas), 0–100. Was spec.size in v1alpha1.',
        }),
      ),
      ...sharedSpecFields,
    },
    { description: 'Desired state of the memcached cluster.' },
  ),
);

export type MemcachedV1beta1Spec = Infer<typeof memcachedV1beta1Spec>;

export const MemcachedV1beta1Resource = defineMemcachedVersion('v1beta1', memcachedV1beta1Spec, { column: 'Replicas', path: '.spec.replicas' });

export type MemcachedV1beta1 = ResourceOf<typeof MemcachedV1beta1Resource>;
