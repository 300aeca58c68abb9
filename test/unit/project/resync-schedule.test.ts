/** The repository's serverless.yml schedules the resync at the period the Memcached controller declares. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { defineController } from '../../../src/core/controller/controller.ts';
import { memcachedController } from '../../../src/memcached/controller.ts';
import { resyncScheduleExpression } from '../../../src/core/resync/resync-period.ts';

test("serverless.yml's resyncSchedule is the controller's declared resync period", () => {
  const yaml = readFileSync(new URL('../../../serverless.yml', import.meta.url), 'utf8');
  const declared = /^\s*resyncSchedule:\s*(\S.*?)\s*$/m.exec(yaml)?.[1];
  assert.equal(declared, resyncScheduleExpression(defineController(memcachedController).resyncSeconds));
});
