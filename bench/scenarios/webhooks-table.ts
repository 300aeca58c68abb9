/**
 * The webhooks scenario's table in the report (bench/report.ts): types only from the scenario,
 * so rendering a report loads nothing it measures with.
 */
import type { WebhookResult } from './webhooks.ts';

/** The markdown lines of the webhooks scenario. Pure. */
export function webhookTable(r: WebhookResult): string[] {
  const label = {
    none: 'no webhook (operator namespace, excluded)',
    warm: 'both webhooks, warm function',
    cold: 'both webhooks, each invocation a fresh function process',
  } as const;
  return [
    '### Webhooks: admission latency (server-side dry-run create of a Memcached; API server → forwarder endpoint → Lambda Invoke API → shipped bundle)',
    '',
    '| path | requests | p50 ms | p99 ms | max ms |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...r.rows.map((row) => `| ${label[row.mode]} | ${row.requests} | ${row.p50} | ${row.p99} | ${row.max} |`),
    '',
    `Cold invocation inside the fresh process (median): Node bootstrap ${r.cold.bootMs} ms, bundle import ${r.cold.importMs} ms, first call ${r.cold.callMs} ms (bundle ${(r.bundleBytes / 1024).toFixed(0)} KiB). Lambda's runtime init and the network hop to AWS are not included.`,
    '',
  ];
}
