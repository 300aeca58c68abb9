/**
 * Fault cases inside a reconcile, with a test controller (widget-function.ts) on a test CRD,
 * run by the function runner process under its own RBAC: a reconcile that throws (always, or
 * only at first), one that hangs past the function's time budget (honouring `ctx.signal`, or
 * ignoring it), and one that conflicts (409) with a concurrent writer. The failing ones end in
 * the DLQ with `RetriesExhausted` after exactly `maxAttempts` reconciles and a Warning Event;
 * everything else converges. These cases are about one reconcile each, so their workloads are
 * small (a dozen widgets).
 *
 * Every case runs in both orderings (`CASE_ORDERINGS`): unordered, and per-key — a FIFO work
 * queue grouped by object key, the retries' backoff through the delay queue and the delay
 * mover (docs/architecture.md, "Per-key ordering") — with the same assertions.
 */
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { encodeMessage, newMessage } from '../../src/contract/message.ts';
import type { Identity } from '../../src/testing/index.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';
import { ORDERINGS, type Ordering } from '../../src/contract/ordering.ts';
import { CASE_ORDERINGS, CLUSTER, FaultEnv, assertNothingLost, caseLine, named, sleep, titled, type Workload } from './harness.ts';
import { WIDGET, WIDGET_RETRY, type Widget } from './widget-function.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures');
const WIDGET_FUNCTION = join(import.meta.dirname, 'widget-function.ts');
const NAMESPACES: KindRef = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };
const EVENTS: KindRef = { apiVersion: 'events.k8s.io/v1', kind: 'Event', plural: 'events', namespaced: true };

let env: FaultEnv;
let identity: Identity;

before(async () => {
  env = await FaultEnv.start({
    crds: [join(FIXTURES, 'widgets-crd.yaml')],
    manifests: [join(FIXTURES, 'widgets-rbac.yaml')],
    memcachedFunction: false,
    // Short, so a timed-out batch comes back (and is redriven) quickly.
    visibilityTimeoutSeconds: 6,
    maxReceiveCount: 3,
    orderings: ORDERINGS,
  });
  identity = await env.cp.identity('widget-function', ['faults:widgets']);
});
afterEach(async () => {
  await env?.stopProcesses();
});
after(async () => {
  await env?.stop();
});

/** Widgets of one namespace (per-key: `<namespace>-pk`); those expected to fail are not expected to converge. */
class Widgets implements Workload {
  readonly namespace: string;
  readonly ordering: Ordering;
  readonly modes = new Map<string, Widget['spec']['mode']>();

  constructor(namespace: string, ordering: Ordering) {
    this.namespace = named(namespace, ordering);
    this.ordering = ordering;
  }

  async create(modes: Record<Widget['spec']['mode'], number>): Promise<void> {
    await env.admin.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: this.namespace } });
    for (const [mode, count] of Object.entries(modes) as [Widget['spec']['mode'], number][]) {
      for (let i = 0; i < count; i++) {
        const name = `${mode}-${i}`;
        const created = await env.admin.create<Widget>(WIDGET, {
          apiVersion: WIDGET.apiVersion,
          kind: WIDGET.kind,
          metadata: { name, namespace: this.namespace },
          spec: { mode },
        });
        this.modes.set(name, mode);
        await env.inject(
          [
            encodeMessage(
              newMessage(
                { cluster: CLUSTER, ...WIDGET, namespace: this.namespace, name, uid: created.metadata.uid, resourceVersion: created.metadata.resourceVersion },
                'Added',
              ),
            ),
          ],
          this.ordering,
        );
      }
    }
  }

  failing(): string[] {
    return [...this.modes].filter(([, mode]) => mode === 'throw' || mode === 'hang' || mode === 'stuck').map(([name]) => name);
  }

  async check() {
    const { items } = await env.admin.list<Widget>(WIDGET, { namespace: this.namespace });
    const pending: string[] = [];
    let converged = 0;
    let total = 0;
    for (const w of items) {
      if (this.failing().includes(w.metadata.name)) continue;
      total++;
      if (w.status?.done === true && w.status.observedGeneration === w.metadata.generation) converged++;
      else pending.push(`${w.metadata.name}: status ${JSON.stringify(w.status ?? {})}`);
    }
    return { converged, total, pending };
  }

  async warnings(): Promise<Map<string, string[]>> {
    const { items } = await env.admin.list<KubeObject & { reason?: string; type?: string; regarding?: { name?: string } }>(EVENTS, {
      namespace: this.namespace,
    });
    const out = new Map<string, string[]>();
    for (const e of items) if (e.type === 'Warning') out.set(e.regarding?.name ?? '', [...(out.get(e.regarding?.name ?? '') ?? []), String(e.reason)]);
    return out;
  }
}

function countsFor(namespace: string, name: string): number {
  return env.reconciles.filter((r) => r.key === `Widget/${namespace}/${name}` && !r.gone).length;
}

for (const ordering of CASE_ORDERINGS) {
  test(
    titled('a reconcile that throws: retried with backoff, exactly maxAttempts times, then the DLQ and a Warning Event; a flaky one converges', ordering),
    async (t) => {
      const started = Date.now();
      const sent = env.proxy.total();
      await env.startFunction(named('fn-throw', ordering), { ordering, module: WIDGET_FUNCTION, identity });
      const widgets = new Widgets('throws', ordering);
      await widgets.create({ ok: 10, flaky: 3, throw: 3, hang: 0, stuck: 0, conflict: 0 });
      const result = await assertNothingLost(env, widgets, {
        timeoutMs: 120_000,
        dlq: { RetriesExhausted: 3 },
        maxReconcilesPerObject: WIDGET_RETRY.maxAttempts,
        ordering,
      });
      const warnings = await widgets.warnings();
      for (const name of widgets.failing()) {
        assert.equal(countsFor(widgets.namespace, name), WIDGET_RETRY.maxAttempts, `${name} was reconciled exactly maxAttempts times`);
        assert.deepEqual(warnings.get(name), ['ReconcileFailed'], `${name} has a ReconcileFailed Warning Event`);
        assert.ok(
          result.deadLetters.some((d) => d.body.includes(`"name":"${name}"`)),
          `${name} is in the DLQ`,
        );
      }
      for (const i of [0, 1, 2]) assert.equal(countsFor(widgets.namespace, `flaky-${i}`), 3, 'a flaky widget: two failures, then success');
      t.diagnostic(
        caseLine(
          titled('reconcile throws', ordering),
          started,
          sent,
          env,
          result,
          `3 always throw → DLQ after ${WIDGET_RETRY.maxAttempts} attempts, 3 flaky converge`,
        ),
      );
      assert.equal(result.converged, 13);
    },
  );

  test(
    titled('a reconcile that hangs past the time budget: aborted, retried, then the DLQ; keys beside it in the same batches converge', ordering),
    async (t) => {
      const started = Date.now();
      const sent = env.proxy.total();
      // A 2 s reserve of a 4 s timeout: the hanging reconcile is aborted with 1 s left, ample
      // time for its retry message even on a loaded machine.
      const fn = await env.startFunction(named('fn-hang', ordering), {
        ordering,
        module: WIDGET_FUNCTION,
        identity,
        timeoutSeconds: 4,
        env: { OPERLESS_BUDGET_RESERVE_MS: '2000' },
      });
      const widgets = new Widgets('hangs', ordering);
      await widgets.create({ ok: 8, hang: 2, flaky: 0, throw: 0, stuck: 0, conflict: 0 });
      const result = await assertNothingLost(env, widgets, {
        timeoutMs: 150_000,
        dlq: { RetriesExhausted: 2 },
        maxReconcilesPerObject: WIDGET_RETRY.maxAttempts,
        ordering,
      });
      for (const name of widgets.failing())
        assert.equal(countsFor(widgets.namespace, name), WIDGET_RETRY.maxAttempts, `${name} was aborted and retried exactly maxAttempts times`);
      const budgetErrors = env.reconciles.filter((r) => r.key.startsWith(`Widget/${widgets.namespace}/hang-`) && r.result !== 'success');
      assert.ok(budgetErrors.length > 0);
      const outcomes = fn.lines.filter((l) => l.msg === 'invocation').map((l) => String(l.outcome));
      assert.ok(!outcomes.includes('timeout'), 'no invocation ran into the function timeout: the budget stopped the hanging reconcile first');
      t.diagnostic(
        caseLine(
          titled('reconcile hangs past the budget', ordering),
          started,
          sent,
          env,
          result,
          '2 hang → aborted by the budget, DLQ after 5 attempts; 8 beside them converge',
        ),
      );
      assert.equal(result.converged, 8);
    },
  );

  test(titled('a reconcile that conflicts (409) with a concurrent writer: retried with fresh state until it wins; nothing in the DLQ', ordering), async (t) => {
    const started = Date.now();
    const sent = env.proxy.total();
    await env.startFunction(named('fn-conflict', ordering), { ordering, module: WIDGET_FUNCTION, identity });
    const widgets = new Widgets('conflicts', ordering);
    // The concurrent writer: bumps every conflict widget's resourceVersion every 100 ms until
    // the first reconcile has hit a 409 (at most 30 s).
    const conflicted = () => env.reconciles.some((r) => r.key.startsWith(`Widget/${widgets.namespace}/conflict-`) && r.result === 'conflict');
    const writer = (async () => {
      const stopAt = Date.now() + 30_000;
      let tick = 0;
      while (!conflicted() && Date.now() < stopAt) {
        await Promise.all(
          [0, 1, 2, 3].map((i) =>
            env.admin
              .mergePatch(WIDGET, `conflict-${i}`, widgets.namespace, { metadata: { annotations: { 'faults.operless.dev/tick': String(tick) } } })
              .catch(() => undefined),
          ),
        );
        tick++;
        await sleep(100);
      }
    })();
    await widgets.create({ conflict: 4, ok: 4, flaky: 0, throw: 0, hang: 0, stuck: 0 });
    await writer;
    const result = await assertNothingLost(env, widgets, { timeoutMs: 120_000, maxReconcilesPerObject: WIDGET_RETRY.maxAttempts, ordering });
    const conflicts = env.reconciles.filter((r) => r.key.startsWith(`Widget/${widgets.namespace}/conflict-`) && r.result === 'conflict').length;
    assert.ok(conflicts > 0, 'some reconciles hit 409 Conflict');
    for (const i of [0, 1, 2, 3]) {
      const w = await env.admin.get<Widget>(WIDGET, `conflict-${i}`, widgets.namespace);
      assert.ok(w?.metadata.annotations?.['faults.operless.dev/reconciled'], `conflict-${i}: the guarded write landed in the end`);
    }
    t.diagnostic(caseLine(titled('reconcile conflicts (409)', ordering), started, sent, env, result, `${conflicts} conflicts retried`));
    assert.equal(result.converged, 8);
  });

  test(
    titled(
      'a reconcile that ignores ctx.signal and hangs: abandoned at the budget, retried, then the DLQ with its reason; its batch-mates are acknowledged and converge',
      ordering,
    ),
    async (t) => {
      const started = Date.now();
      const sent = env.proxy.total();
      // One poller and a batching window, so the stuck widget shares its batches with the others.
      // A 2 s reserve of a 4 s timeout: signal aborted with 1 s left, the stuck reconcile
      // abandoned with 500 ms left (its retry sent), the answer at the latest with 200 ms left.
      const fn = await env.startFunction(named('fn-stuck', ordering), {
        ordering,
        module: WIDGET_FUNCTION,
        identity,
        timeoutSeconds: 4,
        maxConcurrency: 1,
        batchWindowSeconds: 2,
        env: { OPERLESS_BUDGET_RESERVE_MS: '2000' },
      });
      const widgets = new Widgets('stuck', ordering);
      await widgets.create({ stuck: 2, ok: 10, flaky: 0, throw: 0, hang: 0, conflict: 0 });
      const result = await assertNothingLost(env, widgets, {
        timeoutMs: 150_000,
        dlq: { RetriesExhausted: 2 },
        maxReconcilesPerObject: WIDGET_RETRY.maxAttempts,
        ordering,
      });
      const invocations = fn.lines.filter((l) => l.msg === 'invocation');
      const timeouts = invocations.filter((l) => l.outcome === 'timeout').length;
      const abandoned = fn.lines.filter((l) => /ignored ctx\.signal/.test(String(l.msg)));
      const warnings = await widgets.warnings();
      t.diagnostic(
        caseLine(
          titled('reconcile ignores ctx.signal', ordering),
          started,
          sent,
          env,
          result,
          `2 stuck → abandoned ${abandoned.length} times, DLQ after ${WIDGET_RETRY.maxAttempts} attempts; 10 beside them converge; ${timeouts} of ${invocations.length} invocations timed out`,
        ),
      );
      assert.equal(timeouts, 0, 'no invocation ran into the function timeout: the handler answered in time');
      for (const name of widgets.failing()) {
        assert.equal(countsFor(widgets.namespace, name), WIDGET_RETRY.maxAttempts, `${name} was abandoned and retried exactly maxAttempts times`);
        assert.equal(
          abandoned.filter((l) => l.key === `Widget/${widgets.namespace}/${name}`).length,
          WIDGET_RETRY.maxAttempts,
          `each abandoned run of ${name} is logged with its key`,
        );
        assert.deepEqual(warnings.get(name), ['ReconcileFailed'], `${name} has a ReconcileFailed Warning Event`);
        assert.ok(
          result.deadLetters.some((d) => d.body.includes(`"name":"${name}"`) && d.reason === 'RetriesExhausted'),
          `${name} is in the DLQ with operless.reason RetriesExhausted`,
        );
      }
      assert.ok(
        abandoned.every((l) => String(l.key).startsWith(`Widget/${widgets.namespace}/stuck-`)),
        'only the stuck widgets were abandoned',
      );
      const shared = invocations.some((l) => Number(l.records) > 1);
      assert.ok(shared, 'some batch held more than one record (the stuck widgets had batch-mates)');
      assert.equal(result.converged, 10, 'every widget beside them converged, acknowledged in the same invocations');
    },
  );
}
