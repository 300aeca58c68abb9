/**
 * A test controller for the fault suite: `Widget` (fixtures/widgets-crd.yaml), whose
 * `spec.mode` says how its reconcile misbehaves. The function runner process loads this
 * module directly (Node runs the TypeScript), with the same runtime (`toSqsHandler`) the
 * shipped functions use.
 *
 * - `ok`: writes `status.done` and returns done.
 * - `flaky`: throws on its first two attempts, then behaves as `ok`.
 * - `throw`: always throws → retries with backoff, then the DLQ (`RetriesExhausted`).
 * - `hang`: never finishes on its own; it honours `ctx.signal`, which the runtime aborts when
 *   the invocation's time budget runs out → retried like a throw, then the DLQ.
 * - `stuck`: never finishes and ignores `ctx.signal` → the runtime stops waiting for it when
 *   a quarter of the budget's reserve remains, counts it as failed (retried, then the DLQ),
 *   and still acknowledges its batch-mates before the function timeout.
 * - `conflict`: reads, waits 300 ms, then writes an annotation guarded by the resourceVersion
 *   it read — a concurrent writer makes that a 409 Conflict → quick retry with fresh state.
 *
 * Fast retries so the cases fit the suite's time: 1 s base, 2 s cap, 5 attempts.
 */
import { defineController } from '../../src/core/controller/controller.ts';
import { toSqsHandler } from '../../src/core/handler/handler.ts';
import { done } from '../../src/core/controller/result.ts';
import type { ReconcileContext } from '../../src/core/controller/types.ts';
import type { KindRef, KubeObject } from '../../src/kube/types.ts';

export const WIDGET: KindRef = { apiVersion: 'faults.operless.dev/v1', kind: 'Widget', plural: 'widgets', namespaced: true };
export const WIDGET_RETRY = { baseSeconds: 1, capSeconds: 2, maxAttempts: 5 } as const;

export interface Widget extends KubeObject {
  spec: { mode: 'ok' | 'flaky' | 'throw' | 'hang' | 'stuck' | 'conflict' };
  status?: { done?: boolean; observedGeneration?: number };
}

function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

async function reconcileWidget(widget: Widget, ctx: ReconcileContext<Widget>) {
  const { name, namespace } = widget.metadata;
  switch (widget.spec.mode) {
    case 'throw':
      throw new Error(`widget ${name} fails on purpose (attempt ${ctx.message.attempt})`);
    case 'hang':
      await untilAborted(ctx.signal);
      break;
    case 'stuck':
      await new Promise(() => {});
      break;
    case 'flaky':
      if (ctx.message.attempt < 2) throw new Error(`widget ${name} fails on purpose on attempt ${ctx.message.attempt}`);
      break;
    case 'conflict':
      await new Promise((resolve) => setTimeout(resolve, 300));
      await ctx.client.mergePatch(WIDGET, name, namespace, {
        metadata: { resourceVersion: widget.metadata.resourceVersion, annotations: { 'faults.operless.dev/reconciled': String(widget.metadata.generation) } },
      });
      break;
    default:
      break;
  }
  await ctx.updateStatus({ done: true });
  return done();
}

export const controllers = [defineController<Widget>({ ...WIDGET, reconcile: reconcileWidget, retry: WIDGET_RETRY })];
export const handler = toSqsHandler(controllers);
