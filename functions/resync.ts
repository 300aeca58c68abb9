/**
 * Lambda entry point: the scheduled resync of every Memcached (see src/core/resync/resync.ts).
 */
import { createLogger, createResyncHandler } from '../src/core/resync/resync.ts';
import { MEMCACHED } from '../src/memcached/types.ts';

export const handler = createResyncHandler({ kinds: [MEMCACHED], log: createLogger() });
