/**
 * Lambda entry point: the Memcached reconcile function, fed by the work queue.
 */
import { defineController } from '../src/core/controller.ts';
import { toSqsHandler } from '../src/core/handler.ts';
import { memcachedController } from '../src/memcached/controller.ts';

export const handler = toSqsHandler(defineController(memcachedController));
