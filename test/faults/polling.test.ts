/**
 * A polling controller under the faults where a requeue chain matters: the function runner
 * SIGKILLed after it sent a batch's follow-ups and before the batch was acknowledged (a Lambda
 * crash or timeout: its records come back though their requeues are already queued), the broker stopped and restarted, the API
 * server stopped and restarted. The controller (poller-function.ts) asks for `requeueAfter`
 * until its `status.progress` reaches `spec.polls`, so every object converges only through its
 * own chain of requeues — in per-key ordering through the pending-requeue mark, the delay
 * queue, the mover and the FIFO work queue (docs/architecture.md, "Per-key ordering").
 *
 * Every case, in both orderings, hits every chain mid-way (each object has polled, none is
 * done) and asserts:
 * - nothing lost: every object converges (`progress == polls`, `done`), both queues drain, the
 *   DLQ holds nothing (harness.ts `assertNothingLost`);
 * - the chains survive the fault: every one was mid-way when it struck and has run to its end;
 * - no duplicate-chain growth: the chains that end (reconciles that find the object done) are
 *   one per object per-key — the marks merge or supersede every duplicate — and at most two
 *   unordered, where a redelivered batch whose requeues were already sent starts a second chain
 *   (docs/faults.md, "What to know"); and the messages pending in the queues (visible, in
 *   flight, delayed; per-key the delay queue's too), sampled through the case, never exceed
 *   three per object (`PENDING_PER_OBJECT`).
 *
 * Throttling is not among the cases: a 429 requeues with the same attempt after `Retry-After`,
 * the path the throttling case of infrastructure.test.ts already runs in both orderings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import { ORDERINGS, type Ordering } from '../../src/contract/ordering.ts';
import type { KindRef } from '../../src/kube/types.ts';
import type { Identity } from '../../src/testing/index.ts';
import {
  CASE_ORDERINGS,
  CLUSTER,
  assertNothingLost,
  caseLine,
  invocationsStarted,
  invocationsUnacknowledged,
  named,
  sleep,
  titled,
  until,
  useFaultEnv,
  type FaultEnv,
  type LoggedProcess,
  type Workload,
} from './harness.ts';
import { POLLER, POLLER_RETRY, type Poller } from './poller-function.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures');
const POLLER_FUNCTION = join(import.meta.dirname, 'poller-function.ts');
const NAMESPACES: KindRef = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };

/** Objects per case and the polls each makes: a chain of about 15 s, long enough to outlast the fault's start. */
const OBJECTS = 8;
const POLLS = 4;
/**
 * Messages an object may have pending at once: its chain's message, the successor a reconcile
 * sends before that message is deleted, and the record of a killed invocation held until its
 * visibility timeout beside the requeue it already sent (unordered: or a second chain).
 */
const PENDING_PER_OBJECT = 3;
/** How long the broker or the API server is down: the fault itself, not a synchronisation. */
const OUTAGE_MS = 6_000;

const env = useFaultEnv({
  crds: [join(FIXTURES, 'pollers-crd.yaml')],
  manifests: [join(FIXTURES, 'pollers-rbac.yaml')],
  memcachedFunction: false,
  // The broker restart keeps the queued requeues, as SQS would.
  persistMessages: true,
  // Short, so a killed invocation's records come back quickly; above the runner's 6 s timeout.
  visibilityTimeoutSeconds: 8,
  orderings: ORDERINGS,
});
let identity: Identity | undefined;
const pollerIdentity = async (): Promise<Identity> => (identity ??= await env().cp.identity('poller-function', ['faults:pollers']));

/** Pollers of one namespace: converged when the chain counted `progress` up to `spec.polls` and marked the object done. */
class Pollers implements Workload {
  readonly namespace: string;
  private readonly faults: FaultEnv;

  constructor(faults: FaultEnv, namespace: string) {
    this.faults = faults;
    this.namespace = namespace;
  }

  /** Creates the objects and sends each one's `Added` (no forwarder: the chain is all that reconciles them). */
  async create(ordering: Ordering): Promise<void> {
    await this.faults.admin.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: this.namespace } });
    for (let i = 0; i < OBJECTS; i++) {
      const created = await this.faults.admin.create<Poller>(POLLER, {
        apiVersion: POLLER.apiVersion,
        kind: POLLER.kind,
        metadata: { name: `poller-${i}`, namespace: this.namespace },
        spec: { polls: POLLS },
      });
      await this.faults.inject(
        [
          encodeMessage(
            newMessage(
              {
                cluster: CLUSTER,
                ...POLLER,
                namespace: this.namespace,
                name: created.metadata.name,
                uid: created.metadata.uid,
                resourceVersion: created.metadata.resourceVersion,
              },
              'Added',
            ),
          ),
        ],
        ordering,
      );
    }
  }

  async progress(): Promise<Map<string, Poller['status']>> {
    const { items } = await this.faults.admin.list<Poller>(POLLER, { namespace: this.namespace });
    return new Map(items.map((p) => [p.metadata.name, p.status]));
  }

  async check() {
    const { items } = await this.faults.admin.list<Poller>(POLLER, { namespace: this.namespace });
    const pending: string[] = [];
    for (const p of items) {
      const s = p.status;
      if (!(s?.done === true && s.progress === p.spec.polls && s.observedGeneration === p.metadata.generation))
        pending.push(`${p.metadata.name}: status ${JSON.stringify(s ?? {})}`);
    }
    return { converged: items.length - pending.length, total: items.length, pending };
  }
}

/** The most messages pending in the queues of `ordering` at any sample, until `stop`. */
function samplePending(faults: FaultEnv, ordering: Ordering): { stop: () => Promise<number> } {
  let max = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const d = await faults.pending(ordering);
        max = Math.max(max, d.visible + d.inFlight + d.delayed);
      } catch {
        // the broker is down: nothing to sample
      }
      await sleep(500);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return max;
    },
  };
}

/** What a fault did, for the case's line and its own assertions once everything converged. */
interface FaultReport {
  readonly note: string;
  readonly verify?: () => void;
}

interface PollingFault {
  readonly name: string;
  readonly title: string;
  /** Strikes while every chain is mid-way; may replace the function runner (`restart`). */
  strike(faults: FaultEnv, fn: LoggedProcess, restart: () => Promise<LoggedProcess>, ordering: Ordering): Promise<FaultReport>;
}

const FAULTS: readonly PollingFault[] = [
  {
    name: 'crash',
    title: 'the function runner SIGKILLed after it sent its follow-ups and before its batch was acknowledged (a crash or Lambda timeout), then restarted',
    async strike(faults, fn, restart, ordering) {
      // The work queue's acknowledgements are held from now on, so an invocation that has
      // handled its batch (follow-ups sent; per-key, requeues marked) cannot delete it; the
      // runner is killed once one such delete is held.
      const queue = faults.layout(ordering).queueUrl.split('/').at(-1);
      const held = faults.proxy.heldDeletes;
      faults.proxy.holdDeletes(queue);
      try {
        await until('an invocation handled its batch and its acknowledgement is held', async () => faults.proxy.heldDeletes > held, 60_000);
        fn.child.kill('SIGKILL');
      } finally {
        faults.proxy.holdDeletes(undefined);
      }
      await Promise.all([fn.exited, fn.output]);
      const unacknowledged = invocationsUnacknowledged(fn);
      const requestIds = new Set(unacknowledged.map((i) => i.requestId));
      const requeued = fn.lines.filter((l) => requestIds.has(String(l.requestId)) && l.msg === 'reconciled' && l.result === 'requeue_after').length;
      assert.ok(requeued > 0, `the killed runner had sent requeues for records it never acknowledged: ${JSON.stringify(unacknowledged)}`);
      const killed = new Set(unacknowledged.flatMap((i) => i.messageIds));
      const fn2 = await restart();
      return {
        note: `killed with ${killed.size} handled records unacknowledged (${requeued} requeues already sent for them), all delivered again`,
        verify: () => {
          const again = new Set(invocationsStarted(fn2).flatMap((i) => i.messageIds));
          assert.deepEqual(
            [...killed].filter((id) => !again.has(id)),
            [],
            'every unacknowledged record of the killed runner was delivered again',
          );
        },
      };
    },
  },
  {
    name: 'broker',
    title: `the broker stopped for ${OUTAGE_MS / 1000} s and restarted`,
    async strike(faults, fn) {
      const outageStarted = Date.now();
      await faults.broker.pause();
      await fn.line(/cannot receive from the queue/, 30_000);
      await sleep(Math.max(0, OUTAGE_MS - (Date.now() - outageStarted)));
      await faults.broker.start();
      return { note: `broker process down ${((Date.now() - outageStarted) / 1000).toFixed(1)} s` };
    },
  },
  {
    name: 'apiserver',
    title: `the API server stopped for ${OUTAGE_MS / 1000} s and restarted`,
    async strike(faults) {
      const outageStarted = Date.now();
      await faults.cp.stopApiServer();
      await sleep(OUTAGE_MS);
      await faults.cp.startApiServer();
      return { note: `API server down ${((Date.now() - outageStarted) / 1000).toFixed(1)} s` };
    },
  },
];

for (const fault of FAULTS) {
  for (const ordering of CASE_ORDERINGS) {
    test(
      titled(`a polling controller under ${fault.title}: every chain survives and converges, nothing lost, no duplicate chains pile up`, ordering),
      async (t) => {
        const faults = env();
        const started = Date.now();
        const sent = faults.proxy.total();
        const start = (suffix: string) =>
          pollerIdentity().then((id) =>
            faults.startFunction(named(`fn-poll-${fault.name}${suffix}`, ordering), { ordering, module: POLLER_FUNCTION, identity: id }),
          );
        const runners = [await start('')];
        const pollers = new Pollers(faults, named(`poll-${fault.name}`, ordering));
        await pollers.create(ordering);
        await until(
          `every poller in ${pollers.namespace} has polled`,
          async () => [...(await pollers.progress()).values()].filter((s) => (s?.progress ?? 0) >= 1).length === OBJECTS,
          120_000,
        );
        const atStrike = await pollers.progress();
        assert.deepEqual(
          [...atStrike].filter(([, s]) => s?.done === true).map(([name]) => name),
          [],
          'the fault strikes every chain mid-way: no poller is done yet',
        );
        const sampler = samplePending(faults, ordering);
        let report: FaultReport;
        let result: Awaited<ReturnType<typeof assertNothingLost>>;
        let maxPending: number;
        try {
          report = await fault.strike(
            faults,
            runners[0]!,
            async () => {
              const fn = await start('-2');
              runners.push(fn);
              return fn;
            },
            ordering,
          );
          result = await assertNothingLost(faults, pollers, {
            timeoutMs: 180_000,
            ordering,
            maxReconcilesPerObject: 2 * (POLLS + 1) + POLLER_RETRY.maxAttempts,
          });
        } finally {
          maxPending = await sampler.stop();
        }
        report.verify?.();
        // Chains that ended: reconciles that found the object done (result `success`), per object.
        const ends = new Map<string, number>();
        const failed = faults.reconciles.filter((r) => r.key.includes(`/${pollers.namespace}/`) && r.msg === 'reconcile failed; retrying').length;
        for (const r of faults.reconciles)
          if (r.key.includes(`/${pollers.namespace}/`) && r.msg === 'reconciled' && r.result === 'success') ends.set(r.key, (ends.get(r.key) ?? 0) + 1);
        const merged = runners
          .flatMap((fn) => fn.lines)
          .filter((l) => l.msg === 'reconciled; its requeue merged into the pending one' && String(l.key).includes(`/${pollers.namespace}/`)).length;
        const superseded = runners
          .flatMap((fn) => fn.lines)
          .filter((l) => String(l.msg).startsWith('a requeue a later one replaced') && String(l.key).includes(`/${pollers.namespace}/`)).length;
        const mostEnds = Math.max(0, ...ends.values());
        t.diagnostic(
          caseLine(
            titled(`polling controller, ${fault.name}`, ordering),
            started,
            sent,
            faults,
            result,
            `${OBJECTS} pollers × ${POLLS} polls; ${report.note}; ${failed} reconciles failed and retried; at most ${maxPending} messages pending; chains ended per object at most ${mostEnds}; ${merged} requeues merged, ${superseded} superseded`,
          ),
        );
        assert.equal(result.converged, OBJECTS);
        assert.equal(ends.size, OBJECTS, "every poller's chain ran to its end after the fault");
        assert.ok(
          maxPending <= PENDING_PER_OBJECT * OBJECTS,
          `no duplicate chains pile up: at most ${maxPending} messages pending for ${OBJECTS} pollers (bound: ${PENDING_PER_OBJECT} each)`,
        );
        assert.ok(
          mostEnds <= (ordering === 'per-key' ? 1 : 2),
          `chains per poller at the end: at most ${mostEnds} (${JSON.stringify(Object.fromEntries(ends))}); per-key the marks leave one, unordered a redelivered batch may start a second`,
        );
        if (fault.name === 'apiserver') assert.ok(failed > 0, 'the outage hit the chains: some reconciles failed and were retried');
      },
    );
  }
}
