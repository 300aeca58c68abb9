/**
 * Runs in a fresh Node process: one cold invocation of the shipped webhooks bundle, as Lambda
 * runs a function on a new instance. Reads the invocation (`{ route, review }`, JSON) from
 * stdin, imports the bundle, calls its handler once and prints one JSON line: the handler's
 * result and the timings (Node bootstrap, import, the call). The parent
 * (bench/scenarios/webhooks.ts) serves it behind the local Lambda Invoke API.
 */
import { pathToFileURL } from 'node:url';

const bootMs = performance.now();
const [bundle] = process.argv.slice(2);
let input = '';
for await (const chunk of process.stdin) input += chunk;
const t0 = performance.now();
const mod = (await import(pathToFileURL(bundle!).href)) as { handler: (event: unknown, context: unknown) => Promise<unknown> };
const t1 = performance.now();
const result = await mod.handler(JSON.parse(input), { awsRequestId: 'cold', functionName: 'webhooks', getRemainingTimeInMillis: () => 9_000 });
const t2 = performance.now();
process.stdout.write(`${JSON.stringify({ result, bootMs, importMs: t1 - t0, callMs: t2 - t1 })}\n`);
