/**
 * Kubernetes resource quantities (`resource.Quantity`) as numbers: `256Mi` → 268435456,
 * `1G` → 1e9, `500m` → 0.5. Only what the Memcached controller compares (memory sizes);
 * returns undefined for text that is not a quantity, never throws.
 */

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
const QUANTITY = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))?$/;

/** The value of a quantity in base units (bytes for memory), or undefined if it is not one. */
export function parseQuantity(value: number | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  const match = QUANTITY.exec(value.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const suffix = match[2] ?? '';
  if (suffix in BINARY) return amount * (BINARY[suffix] as number);
  if (suffix in DECIMAL) return amount * (DECIMAL[suffix] as number);
  return amount * 10 ** Number(suffix.slice(1));
}

export const MEBIBYTE = 2 ** 20;
