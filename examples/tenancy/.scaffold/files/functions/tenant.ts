/**
 * Lambda entry point: the Tenant reconcile function, fed by its SQS work queue
 * (serverless.yml). `controllers` is exported beside `handler` so `operless dev` knows what
 * this function reconciles and owns (the forwarder's watches).
 */
import { defineController, toSqsHandler } from 'operless';
import { tenantController } from '../src/tenant/controller.ts';

export const controllers = [defineController(tenantController)];
export const handler = toSqsHandler(controllers);
