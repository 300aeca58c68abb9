/**
 * Lambda entry point: the Memcached reconcile function, fed by the work queue.
 *
 * `controllers` is exported beside `handler` so tools (the local loop, forwarder config and
 * RBAC generation) know what this function reconciles and owns.
 */
import { defineController } from '../src/core/controller.ts';
import { toSqsHandler } from '../src/core/handler.ts';
import { memcachedController } from '../src/memcached/controller.ts';

export const controllers = [defineController(memcachedController)];
export const handler = toSqsHandler(controllers);
