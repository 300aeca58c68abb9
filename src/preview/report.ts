/**
 * What `operless preview` prints and which exit code it ends with, from the previews of every
 * object. Pure.
 *
 * Exit codes, for a CI gate: 0 nothing would change; 3 something would change (a child
 * created, changed or deleted, a status or finalizer written); 1 a reconcile would fail (it
 * throws, or a write it makes is refused) or the preview itself failed for an object — 1 wins
 * over 3. (2 is the CLI's usage error.) Events and requeues are reported with an object's
 * changes but change nothing stored: a reconcile that records an Event every time would
 * otherwise never let the gate pass.
 */
import { diffLineText } from './diff.ts';
import type { ObjectPreview, PreviewChange } from './run.ts';

export const PREVIEW_EXIT = { unchanged: 0, failed: 1, changes: 3 } as const;

export function wouldChange(p: ObjectPreview): boolean {
  return p.changes.length > 0;
}

export function failed(p: ObjectPreview): boolean {
  return p.result.type === 'error' || p.previewError !== undefined || p.changes.some((c) => c.action === 'refused');
}

export function previewExitCode(previews: readonly ObjectPreview[]): number {
  if (previews.some(failed)) return PREVIEW_EXIT.failed;
  return previews.some(wouldChange) ? PREVIEW_EXIT.changes : PREVIEW_EXIT.unchanged;
}

const keyOf = (o: { kind?: string | undefined; namespace?: string | undefined; name?: string | undefined }) =>
  `${o.kind ?? '?'}/${o.namespace ? `${o.namespace}/` : ''}${o.name ?? '?'}`;

function changeHeader(c: PreviewChange): string {
  const what = `${keyOf(c)}${c.subresource ? ` (${c.subresource})` : ''}`;
  switch (c.action) {
    case 'create':
      return `  + would create ${what}`;
    case 'change':
      return `  ~ would change ${what}`;
    case 'delete':
      return `  - would delete ${what}`;
    case 'refused':
      return `  ! would be refused: ${c.method ?? 'write'} ${what}: ${c.refusal?.message ?? ''} (${c.refusal?.status ?? '?'})`;
  }
}

function resultText(p: ObjectPreview): string {
  switch (p.result.type) {
    case 'done':
      return 'done';
    case 'requeueAfter':
      return `requeueAfter ${p.result.seconds} s`;
    case 'error':
      return `${p.result.terminal ? 'terminal error' : 'error (would be retried)'}: ${p.result.message}`;
    case 'gone':
      return 'gone (no such object)';
    case 'paused':
      return 'paused (operless.dev/paused): not reconciled';
    case 'superseded':
      return 'superseded';
  }
}

/** The human report: one block per object that would change or fail, then a summary line. */
export function previewText(previews: readonly ObjectPreview[]): string {
  const lines: string[] = [];
  for (const p of previews) {
    if (!wouldChange(p) && !failed(p)) continue;
    lines.push(`${keyOf(p)}: ${resultText(p)}`);
    for (const c of p.changes) {
      lines.push(changeHeader(c));
      for (const d of c.action === 'create' ? [] : c.diff) lines.push(`      ${diffLineText(d)}`);
    }
    for (const e of p.events) lines.push(`  Event ${e.type} ${e.reason}: ${e.note}`);
    if (p.previewError) lines.push(`  ! preview failed: ${p.previewError}`);
  }
  // Timers run on their own ticks, never in a reconcile: a preview names them, it does not run them.
  const timers = new Map<string, { everySeconds: number; starting: number }>();
  for (const p of previews) {
    for (const t of p.timers) {
      const key = `${p.kind} ${t.name}`;
      const seen = timers.get(key) ?? { everySeconds: t.everySeconds, starting: 0 };
      timers.set(key, { ...seen, starting: seen.starting + (t.wouldStart ? 1 : 0) });
    }
  }
  for (const [key, t] of timers)
    lines.push(`timer ${key} every ${t.everySeconds} s: not run by a preview; a reconcile would start its chain for ${t.starting} object(s)`);
  const changing = previews.filter(wouldChange).length;
  const failing = previews.filter(failed).length;
  lines.push(
    `${previews.length} object(s) previewed: ${changing} would change, ${failing} would fail, ${previews.length - new Set([...previews.filter(wouldChange), ...previews.filter(failed)]).size} unchanged; nothing was written.`,
  );
  return `${lines.join('\n')}\n`;
}
