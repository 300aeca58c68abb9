/**
 * Runs in a fresh Node process: imports the shipped function bundle and calls its handler
 * twice with the same SQS event (cold: import + first reconcile; warm: the second call),
 * printing one JSON line of timings. The parent (bench/scenarios/function.ts) passes the
 * bundle path and the event; nothing else is imported before the clock starts. `coldCpuMs`
 * is the CPU time (user + system) of import + first reconcile: on a loaded machine it moves
 * far less than the wall-clock figures, so it is the one to compare bundles by there.
 */
import { pathToFileURL } from 'node:url';

const started = performance.now(); // ms since this process started (Node bootstrap)
const [bundle, eventJson] = process.argv.slice(2);
const event = JSON.parse(eventJson!) as unknown;
const context = {
  awsRequestId: 'cold-start',
  functionName: 'memcached',
  getRemainingTimeInMillis: () => 30_000,
};
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const mod = (await import(pathToFileURL(bundle!).href)) as { handler: (e: unknown, c: unknown) => Promise<{ batchItemFailures?: unknown[] }> };
const t1 = performance.now();
const first = await mod.handler(event, context);
const t2 = performance.now();
const cpu = process.cpuUsage(cpu0);
const second = await mod.handler(event, { ...context, awsRequestId: 'warm' });
const t3 = performance.now();
process.stdout.write(
  `${JSON.stringify({
    bootMs: started,
    importMs: t1 - t0,
    firstCallMs: t2 - t1,
    coldMs: t2 - t0,
    coldCpuMs: (cpu.user + cpu.system) / 1000,
    warmMs: t3 - t2,
    failures: (first.batchItemFailures?.length ?? 0) + (second.batchItemFailures?.length ?? 0),
  })}\n`,
);
