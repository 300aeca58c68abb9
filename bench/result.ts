/**
 * The shape of one benchmark run: its settings and the result `bench/run.ts` writes as JSON
 * and `bench/report.ts` renders as markdown and SVG. Types only, so the runner and the
 * report both depend on it and not on each other.
 */
import type { CostPerMillion, PRICES } from './lib/cost.ts';
import type { Spread } from './lib/stats.ts';
import type { ApiCostResult } from './scenarios/api-cost.ts';
import type { CpuRow } from './scenarios/cpu.ts';
import type { MemoryResult } from './scenarios/memory.ts';
import type { ForwarderResult } from './scenarios/forwarder.ts';
import type { FunctionResult } from './scenarios/function.ts';
import type { RelatedResult } from './scenarios/related.ts';
import type { WebhookResult } from './scenarios/webhooks.ts';
import type { BulkLaneResult } from './scenarios/bulk-lane.ts';
import type { FailoverResult } from './scenarios/failover.ts';
import type { PerObjectResult } from './scenarios/per-object.ts';

export interface BenchSettings {
  readonly sizes: readonly number[];
  readonly baselineWorkers: number;
  readonly equalInvocations: number;
  readonly scaleOutInvocations: number;
  readonly scaleOutKeysPerInvocation: number;
  readonly lagPool: number;
  /** Updates per second of the lag rows the targets are judged on. */
  readonly lagRate: number;
  /** A second, heavier rate shown beside them (one run per system); 0 for none. */
  readonly lagOverloadRate: number;
  readonly lagSeconds: number;
  readonly apiObjects: number;
  readonly forwarderObjects: number;
  readonly burstObjects: number;
  readonly burst: number;
  readonly coldStartRuns: number;
  readonly convergenceTimeoutMs: number;
  /** Related objects: Memcacheds, how many of them refer to the changed ConfigMap, and its changes. */
  readonly relatedObjects: number;
  readonly relatedReferring: number;
  readonly relatedUpdates: number;
  /** Objects of the convergence behind the always-on CPU rows. */
  readonly cpuObjects: number;
  /** Watched objects (primaries + children, cumulative) of the always-on memory rows; the relist lists the largest size's primaries. */
  readonly memorySizes: readonly number[];
  readonly memorySettleMs: number;
  readonly memorySamples: number;
  /** controller-runtime's cache resync period in the API-cost scenario (its periodic-resync row waits one). */
  readonly apiSyncPeriodSeconds: number;
  /** Webhooks: dry-run creates per mode (none, warm), and cold ones (two fresh processes each). */
  readonly webhookRequests: number;
  readonly webhookColdRequests: number;
  /**
   * A live change during a resync: Resyncs queued at once over `pool` objects, `updates` live changes (bulk-lane scenario);
   * controller-runtime (unless left out): its cache's periodic resync (`crSyncPeriodSeconds`) of `resyncs` objects, `crWorkers` workers.
   */
  readonly bulkLane: {
    readonly resyncs: number;
    readonly pool: number;
    readonly updates: number;
    readonly crWorkers: number;
    readonly crSyncPeriodSeconds: number;
  };
  /** Watched objects of the failover scenario (cold vs warm standby). */
  readonly failoverObjects: number;
  /** Per-object cost (issue 33): convergence sizes, steady update rates, the no-op resync's objects and each steady stream's seconds. */
  readonly perObjectSizes: readonly number[];
  readonly perObjectRates: readonly number[];
  readonly perObjectResync: number;
  readonly perObjectSeconds: number;
}

export interface BenchResult {
  date: string;
  mode: 'quick' | 'full' | 'custom';
  repeat: number;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string };
  settings: BenchSettings;
  /** What each system cost the API server and etcd per converged object, pinned and unpinned (the first table). */
  perObject?: PerObjectResult;
  convergence: { n: number; rows: ConvergenceRow[] }[];
  lag: LagRow[];
  apiCost?: { operless: ApiCostResult; controllerRuntime?: ApiCostResult; baseline?: ApiCostResult };
  /** CPU seconds of the always-on process per 1000 reconciles, one row per system. */
  cpu?: CpuRow[];
  memory?: MemoryResult;
  forwarder?: ForwarderResult;
  function?: FunctionResult;
  related?: RelatedResult;
  webhooks?: WebhookResult;
  bulkLane?: BulkLaneResult;
  failover?: FailoverResult;
  /** The cost model from the default (unordered) run with the most reconciles. */
  cost?: CostResult;
  /** The same for per-key ordering, when it ran. */
  costPerKey?: CostResult;
  targets: { figure: string; target: string; measured: string; met?: boolean }[];
}

export interface CostResult {
  from: string;
  reconciles: number;
  memoryMB: number;
  perMillion: CostPerMillion;
  podPerMonth: number;
  prices: typeof PRICES;
}

export interface ConvergenceRow {
  system: string;
  seconds: Spread;
  reconciles: number;
  /** API requests answered over the run, the whole cluster's (median over runs; absent in results before 2026-12-02). */
  apiRequests?: number;
  /** Of those, 409 answers (median over runs). */
  conflicts?: number;
  /** Of those, on what the operator writes (the Memcached, its status, the Deployment and Service it applies; median over runs). */
  operatorConflicts?: number;
  /** The 409s by `VERB resource[/subresource]`, of the last run. */
  conflictsByRequest?: Record<string, number>;
  /** Operless: SQS requests (every action, through the counting proxy) per reconcile. */
  sqsRequestsPerReconcile?: number;
  /** Cores each process that used any CPU kept busy until converged, of the last run (before 2026-12-06: only those of at least 0.05). */
  processCores?: Record<string, number>;
}

export interface LagRow {
  system: string;
  /** Updates per second. */
  rate: number;
  p50: Spread;
  p95: Spread;
  p99: Spread;
  lost: number;
  reconcilesPerUpdate: Spread;
  /** Busy share of the machine's CPUs during the updates (0..1). */
  machineBusy: Spread;
  /** Cores each process that used any CPU kept busy over the updates, of the last run (absent before 2026-12-02; at least 0.05 each before 2026-12-06). */
  processCores?: Record<string, number>;
  samples: number[];
}
