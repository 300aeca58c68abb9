/**
 * Template of `src/<kind>/webhook.ts`: the kind's `defineWebhook` with the routes asked for
 * (defaulting, validation, conversion to the spoke), each a stub that says what to write. Pure.
 */
import { camel } from '../../names.ts';
import type { ApiEntry, WebhookEntry } from '../../project-file.ts';

export function webhookModule(api: ApiEntry, webhook: WebhookEntry): string {
  const k = api.kind;
  const v = camel(k);
  const parts: string[] = [];
  if (webhook.defaulting) {
    parts.push(`  // Defaulting: return the object with the fields you fill in (the runtime computes the JSON
  // patch; only spec, labels and annotations may change). Called on CREATE and UPDATE.
  default: (object) => {
    // TODO: fill in what the user left out, e.g. a default that depends on more than the object.
    if (object.spec.message === undefined) object.spec.message = 'hello';
    return object;
  },`);
  }
  if (webhook.validation) {
    parts.push(`  // Validation: allowed, or denied with a message kubectl prints. ctx.client reads the cluster
  // (what CEL rules in the schema cannot do); give the function's identity those reads.
  validate: (object, ctx) => {
    // TODO: your checks. An update that leaves the spec as it was should pass (finalizer writes).
    if (ctx.oldObject && JSON.stringify(ctx.oldObject.spec) === JSON.stringify(object.spec)) return { allowed: true };
    if (object.spec.message?.trim() === '') return { allowed: false, message: 'spec.message must not be blank' };
    return { allowed: true };
  },`);
  }
  if (webhook.spoke) {
    parts.push(`  // Conversion between the hub (${api.version}, the storage version) and ${webhook.spoke}: both ways, keeping
  // metadata. The handlers above only ever see the hub.
  conversion: {
    spokes: {
      '${api.group}/${webhook.spoke}': {
        // TODO: map the fields that differ between the versions (they are the same until you edit ${webhook.spoke}.ts).
        toHub: (spoke) => ({ ...spoke }) as ${k},
        fromHub: (hub) => ({ ...hub }),
      },
    },
  },`);
  }
  return `/**
 * The ${k} webhooks, served by functions/webhooks.ts through the forwarder's webhook endpoint
 * (the chart renders the webhook configurations from infra/forwarder/webhooks.yaml): ${[webhook.defaulting && 'defaulting', webhook.validation && 'validation', webhook.spoke && `conversion ${api.version} ↔ ${webhook.spoke}`].filter(Boolean).join(', ')}.
 * A handler that throws or runs past its deadline denies the write, naming the webhook and the cause.
 */
import { defineWebhook } from 'operless';
import { ${k}Resource, type ${k} } from './types.ts';

export const ${v}Webhook = defineWebhook<${k}>({
  apiVersion: ${k}Resource.kindRef.apiVersion,
  kind: '${k}',
${parts.join('\n')}
});
`;
}
