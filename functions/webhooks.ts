/**
 * Lambda entry point of the Memcached webhooks (defaulting, validation, conversion), invoked
 * synchronously by the forwarder's webhook endpoint (src/forwarder/webhook/).
 */
import { toWebhookHandler } from '../src/index.ts';
import { memcachedWebhook } from '../src/memcached/webhook.ts';

/** What this function serves, for tools (as `controllers` in functions/memcached.ts). */
export const webhooks = [memcachedWebhook];
export const handler = toWebhookHandler(webhooks);
