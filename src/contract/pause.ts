/**
 * Pausing one object: the annotation `operless.dev/paused: "true"` on a primary stops its
 * reconciles (docs/semantics.md, "Pausing an object"). Anyone who can patch the object can set
 * it; any other value, or none, means not paused. The forwarder routes changes of it like any
 * other annotation, so removing it reconciles the object at once. Pure.
 */
export const PAUSED_ANNOTATION = 'operless.dev/paused';

/** True when the object carries `operless.dev/paused: "true"`. */
export function isPaused(object: { readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> | undefined } } | undefined): boolean {
  return object?.metadata?.annotations?.[PAUSED_ANNOTATION] === 'true';
}
