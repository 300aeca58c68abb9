/**
 * The field managers Operless functions write with: `operless-<kind>` by default (a
 * controller may name its own). The forwarder recognizes an owned object that one of them
 * created, and nobody else has written yet, as the echo of a reconcile's own write
 * (src/forwarder/route/router.ts, `isCreationEcho`); a field manager without the prefix only means
 * those echoes are forwarded like any other change.
 */
export const FIELD_MANAGER_PREFIX = 'operless-';

/** The default field manager of a controller of `kind`. */
export function defaultFieldManager(kind: string): string {
  return `${FIELD_MANAGER_PREFIX}${kind.toLowerCase()}`;
}

/** Whether `manager` is an Operless function's (pure). */
export function isOperlessFieldManager(manager: string): boolean {
  return manager.startsWith(FIELD_MANAGER_PREFIX) && manager.length > FIELD_MANAGER_PREFIX.length;
}
