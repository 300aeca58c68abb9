/**
 * The report's tables of the bulk-lane and failover scenarios (bench/report.ts): types only from
 * the scenarios, so rendering a report loads nothing they measure with.
 */
import type { BulkLaneResult } from './bulk-lane.ts';
import type { FailoverResult } from './failover.ts';

const load = (l: readonly [number, number]) => `${l[0].toFixed(1)} → ${l[1].toFixed(1)}`;

/** The markdown lines of the bulk-lane scenario. Pure. */
export function bulkLaneTable(r: BulkLaneResult): string[] {
  return [
    `### A live change during a resync: ${r.resyncs} Resyncs over ${r.pool} objects, ${r.updates} live changes one a second`,
    '',
    '| system | live change lag p50 | max | every Resync reconciled after | load average (1 min) |',
    '| --- | ---: | ---: | ---: | --- |',
    ...r.rows.map((row) => `| ${row.system} | ${row.lagP50Ms} ms | ${row.lagMaxMs} ms | ${row.drainedSeconds} s | ${load(row.loadavg)} |`),
    '',
    ...(r.controllerRuntime
      ? [
          `controller-runtime's backlog is its cache's own periodic resync (SyncPeriod ${r.controllerRuntime.syncPeriodSeconds} s) of ${r.controllerRuntime.objects} converged objects at spec.size 0 (its work queue folds a key's repeats, so not Resyncs over ${r.pool}); "every Resync reconciled" is from the resync's first reconcile until ${r.controllerRuntime.objects} reconciles. In its window: ${r.rows
            .filter((row) => row.reconcilesInWindow !== undefined)
            .map((row) => `${row.reconcilesInWindow} reconciles, work queue depth up to ${row.maxQueueDepth ?? 0}`)
            .join('; ')} (the Deployment and Service informers' own resyncs enqueue every owner again when they land in it).`,
          '',
        ]
      : []),
  ];
}

/** The markdown lines of the failover scenario. Pure. */
export function failoverTable(r: FailoverResult): string[] {
  const cell = (x: number | null, unit = '') => (x === null ? 'n/a' : `${x}${unit}`);
  return [
    `### Failover at ${r.objects} watched objects: cold vs warm standby (lease ${r.lease})`,
    '',
    '| standby | kill → follower leads | follower leads → change in queue | kill → change in queue | messages sent after the kill | LISTs after the kill | follower VmRSS | load average (1 min) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...r.rows.map(
      (row) =>
        `| ${row.mode} | ${cell(row.killToTakeoverSeconds, ' s')} | ${cell(row.takeoverToChangeSeconds, ' s')} | ${cell(row.killToChangeSeconds, ' s')} | ${row.messagesAfterKill} (${Object.entries(
          row.messagesAfterKillByReason,
        )
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}) | ${row.listRequestsAfterKill} | ${row.followerVmRssMiB} MiB | ${load(row.loadavg)} |`,
    ),
    '',
  ];
}
