/**
 * Lambda entry point: the scheduled resync of every Memcached (see src/queue/resync.ts).
 */
import { createLogger } from '../src/observability/log.ts';
import { createResyncHandler } from '../src/queue/resync.ts';
import { MEMCACHED } from '../src/memcached/types.ts';

export const handler = createResyncHandler({ kinds: [MEMCACHED], log: createLogger() });
