/**
 * Lambda entry point: the Memcached reconcile function, fed by the work queue.
 *
 * `controllers` is exported beside `handler` so tools (the local loop, forwarder config and
 * RBAC generation) know what this function reconciles and owns.
 *
 * `OPERLESS_MEMCACHED_POD_LISTING` (unset: `skip-unobserved`) chooses how the reconcile lists
 * pods (src/memcached/plan.ts); `every-change` is the earlier rule, for the benchmark's
 * before/after run. Any other value fails the function's init, naming the variable.
 */
import { defineController, toSqsHandler } from '../src/index.ts';
import { memcachedControllerWith } from '../src/memcached/controller.ts';
import { POD_LISTING_VARIABLE, podListingFrom } from '../src/memcached/plan.ts';

export const controllers = [defineController(memcachedControllerWith({ podListing: podListingFrom(process.env[POD_LISTING_VARIABLE]) }))];
export const handler = toSqsHandler(controllers);
