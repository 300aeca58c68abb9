/**
 * The embedded SQS-compatible queue server in a process of its own, for the memory probe
 * (test/soak/memory.ts): its messages must not count in the heap being measured. Prints one
 * JSON line `{"endpoint":…,"region":…}` once listening; SIGTERM stops it.
 */
import { startMemoryQueueServer } from '../../src/local/memory-queue-server.ts';

const server = await startMemoryQueueServer({
  queues: [{ name: 'work', visibilityTimeoutSeconds: 60, dlq: { name: 'work-dlq', maxReceiveCount: 5 } }, { name: 'followups' }],
});
process.stdout.write(`${JSON.stringify({ endpoint: server.endpoint, region: server.region })}\n`);
process.on('SIGTERM', () => {
  void server.stop().then(() => process.exit(0));
});
