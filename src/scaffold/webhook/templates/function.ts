/**
 * Template of `functions/webhooks.ts`: the project's one webhook function, created with the
 * first webhook; `create webhook` adds each kind at its markers. Pure.
 */

export const WEBHOOKS_FUNCTION = `/**
 * Lambda entry point: the admission and conversion webhooks of every kind, invoked synchronously
 * by the forwarder's webhook endpoint (serverless.yml: its role alone may invoke this function).
 * \`operless create webhook\` adds kinds at the markers.
 */
import { toWebhookHandler } from 'operless';
// +operless:scaffold:webhook-imports

export const webhooks = [
  // +operless:scaffold:webhooks
];
export const handler = toWebhookHandler(webhooks);
`;
