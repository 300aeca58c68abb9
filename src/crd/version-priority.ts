/**
 * Kubernetes version priority (apimachinery's `CompareKubeAwareVersionStrings`), and what it
 * means for a CRD: discovery's preferred version of a group is its highest-priority served
 * version, and that is the version plain `kubectl get <plural>`, the garbage collector, the
 * namespace controller and most GitOps caches read. When it is not the storage version, every
 * such read goes through the conversion webhook — so an outage of the webhook breaks them and
 * hangs namespace deletion (docs/architecture.md, "Conversion").
 *
 * Order: versions like `v<major>`, `v<major>beta<minor>`, `v<major>alpha<minor>` (numbers that
 * fit a 64-bit int) come first — GA over beta over alpha, then the higher major, then the higher
 * minor (`v2, v1, v1beta2, v1beta1, v1alpha1`); every other name comes after them, in
 * alphabetical order. Pure functions.
 */

const KUBE_VERSION = /^v(\d+)(?:(alpha|beta)(\d+))?$/;
const MAX_INT64 = 9223372036854775807n;
const TYPE_RANK = { alpha: 0, beta: 1, ga: 2 } as const;

interface KubeVersion {
  readonly major: bigint;
  readonly type: keyof typeof TYPE_RANK;
  readonly minor: bigint;
}

function parse(version: string): KubeVersion | undefined {
  const m = KUBE_VERSION.exec(version);
  if (!m) return undefined;
  const major = BigInt(m[1] as string);
  const minor = m[3] === undefined ? 0n : BigInt(m[3]);
  if (major > MAX_INT64 || minor > MAX_INT64) return undefined; // Go's strconv.Atoi fails: not kube-like
  return { major, type: (m[2] as 'alpha' | 'beta' | undefined) ?? 'ga', minor };
}

/** Positive when `a` has priority over `b`, negative when `b` has, 0 when equal. */
export function compareVersionPriority(a: string, b: string): number {
  if (a === b) return 0;
  const pa = parse(a);
  const pb = parse(b);
  if (!pa && !pb) return a < b ? 1 : -1;
  if (!pa) return -1;
  if (!pb) return 1;
  if (pa.type !== pb.type) return TYPE_RANK[pa.type] - TYPE_RANK[pb.type];
  if (pa.major !== pb.major) return pa.major > pb.major ? 1 : -1;
  return pa.minor === pb.minor ? 0 : pa.minor > pb.minor ? 1 : -1;
}

/** Version names sorted highest priority first (the order discovery lists them). */
export function byVersionPriority(versions: readonly string[]): string[] {
  return [...versions].sort((a, b) => compareVersionPriority(b, a));
}

export interface CrdVersionFlags {
  readonly name: string;
  readonly served?: boolean;
  readonly storage?: boolean;
}

/**
 * The versions of a CRD (served or, with `whenServed`, any listed) that outrank its storage
 * version, highest first: each would be preferred over it once served. Empty when the storage
 * version is the preferred one (or there is none).
 */
export function versionsOutrankingStorage(versions: readonly CrdVersionFlags[], whenServed = false): string[] {
  const storage = versions.find((v) => v.storage)?.name;
  if (storage === undefined) return [];
  return byVersionPriority(versions.filter((v) => !v.storage && (whenServed || v.served) && compareVersionPriority(v.name, storage) > 0).map((v) => v.name));
}

/** Why serving `outranking` beside `storage` of `crdName` needs a conversion webhook on the default read path. */
export function preferredSpokeProblem(crdName: string, storage: string, outranking: readonly string[]): string {
  const [first] = outranking;
  return (
    `${crdName}: ${outranking.join(', ')} outrank${outranking.length === 1 ? 's' : ''} the storage version ${storage} in Kubernetes version priority, so once served ${first} is the preferred version: ` +
    `plain \`kubectl get\`, the garbage collector and the namespace controller read every object through the conversion webhook, and an outage of it (or an uninstall that keeps the CRD) breaks those reads and hangs namespace deletion. ` +
    `Make the newest version the hub and storage version and convert the older ones as spokes (docs/architecture.md, "Conversion")`
  );
}
