/**
 * The one validator of each kind of name Operless checks: object names and namespaces, API
 * groups, versions and apiVersions, kinds, qualified names (finalizers, label keys) and cluster
 * ids. The message contract (message.ts), `defineController`, the CRD DSL, the scaffolder and
 * the CLI all use these, so nothing one accepts is refused by another.
 *
 * Each validator is a pure predicate on a string (false for anything else) and includes its
 * length bound, following Kubernetes' own rules (k8s.io/apimachinery/pkg/util/validation):
 *
 * | validator             | rule                                                            | e.g.                          |
 * | --------------------- | --------------------------------------------------------------- | ----------------------------- |
 * | `isDnsLabel`          | RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, ≤ 63            | `default`, `memcacheds`       |
 * | `isDns1035Label`      | RFC 1035 label: as above, starting with a letter, ≤ 63          | CRD plural, singular, short names |
 * | `isDnsSubdomain`      | dot-separated RFC 1123 labels, ≤ 253                            | `memcached-sample`, `example.com` |
| `isVersion`           | `v<n>[(alpha|beta)<n>]`, ≤ 63                                    | `v1`, `v1beta1`               |
 * | `isApiVersion`        | `[<group>/]<version>`, group dot-separated RFC 1123 labels, version `v<n>[(alpha|beta)<n>]`, ≤ 317 in all | `v1`, `cache.example.com/v1alpha1` |
 * | `isConventionalVersion` | the version of a new API: no zero major or minor (`v1`, `v2beta3`), a subset of what `isApiVersion` accepts | `v1alpha1` |
 * | `isKind`              | PascalCase: a capital letter, then letters and digits, ≤ 63     | `Memcached`                   |
 * | `isEventReason`       | UpperCamelCase, ≤ 128                                           | `ReconcileFailed`             |
 * | `isQualifiedName`     | optional DNS-subdomain prefix and `/`, then a name ≤ 63 of letters, digits, `-_.` | `cache.example.com/finalizer` |
 * | `isClusterId`         | letters, digits, `-_.`, starting and ending with a letter or digit, ≤ 63 | `prod-eu`            |
 */

export const DNS_LABEL_MAX_LENGTH = 63;
export const DNS_SUBDOMAIN_MAX_LENGTH = 253;
export const KIND_MAX_LENGTH = 63;
export const CLUSTER_ID_MAX_LENGTH = 63;
export const EVENT_REASON_MAX_LENGTH = 128;
/** A DNS-subdomain group, `/`, and a version of at most 63 characters. */
export const API_VERSION_MAX_LENGTH = DNS_SUBDOMAIN_MAX_LENGTH + 1 + DNS_LABEL_MAX_LENGTH;
const QUALIFIED_NAME_PART_MAX_LENGTH = 63;

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS_LABEL = new RegExp(`^${LABEL}$`);
const DNS_1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = new RegExp(`^${LABEL}(\\.${LABEL})*$`);
const VERSION_PART = 'v[0-9]+((alpha|beta)[0-9]+)?';
const VERSION = new RegExp(`^${VERSION_PART}$`);
const API_VERSION = new RegExp(`^(${LABEL}(\\.${LABEL})*/)?${VERSION_PART}$`);
const CONVENTIONAL_VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const QUALIFIED_NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const CLUSTER_ID = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** A validator of name strings. */
export type NameValidator = (value: unknown) => value is string;

const within = (value: unknown, max: number): value is string => typeof value === 'string' && value.length > 0 && value.length <= max;

/** The validator of non-empty strings of at most `max` characters matching `pattern`. */
const matching =
  (max: number, pattern: RegExp): NameValidator =>
  (value): value is string =>
    within(value, max) && pattern.test(value);

/** An RFC 1123 label (namespaces, REST plurals). */
export const isDnsLabel: NameValidator = matching(DNS_LABEL_MAX_LENGTH, DNS_LABEL);

/** An RFC 1035 label: an RFC 1123 label that starts with a letter (a CRD's plural, singular, short names). */
export const isDns1035Label: NameValidator = matching(DNS_LABEL_MAX_LENGTH, DNS_1035_LABEL);

/** An RFC 1123 subdomain (object names, API groups, Lease names). */
export const isDnsSubdomain: NameValidator = matching(DNS_SUBDOMAIN_MAX_LENGTH, DNS_SUBDOMAIN);

/** A version as an apiVersion may carry it: `v1`, `v1beta1`, `v2alpha3`. */
export const isVersion: NameValidator = matching(DNS_LABEL_MAX_LENGTH, VERSION);

/** The version of a new API (scaffolding, the CRD DSL): `v1`, `v1beta1`, never `v0` or `v1alpha0`. */
export function isConventionalVersion(value: unknown): value is string {
  return isVersion(value) && CONVENTIONAL_VERSION.test(value);
}

/**
 * `<version>` (the core group) or `<group>/<version>`. Contract v1's rule: only the whole is
 * bounded (`API_VERSION_MAX_LENGTH`), not the group and version one by one.
 */
export const isApiVersion: NameValidator = matching(API_VERSION_MAX_LENGTH, API_VERSION);

/** A Kind: PascalCase, letters and digits. */
export const isKind: NameValidator = matching(KIND_MAX_LENGTH, KIND);

/** The reason of a Kubernetes Event (events.k8s.io/v1): UpperCamelCase like a Kind, at most 128 characters. */
export const isEventReason: NameValidator = matching(EVENT_REASON_MAX_LENGTH, KIND);

/** A qualified name (finalizers, label and annotation keys): `[<dns-subdomain>/]<name>`. */
export function isQualifiedName(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const slash = value.indexOf('/');
  const name = slash < 0 ? value : value.slice(slash + 1);
  if (slash >= 0 && !isDnsSubdomain(value.slice(0, slash))) return false;
  return within(name, QUALIFIED_NAME_PART_MAX_LENGTH) && QUALIFIED_NAME_PART.test(name);
}

/** A label value: empty, or a qualified name's name part (at most 63 characters). */
export function isLabelValue(value: unknown): value is string {
  return value === '' || (within(value, QUALIFIED_NAME_PART_MAX_LENGTH) && QUALIFIED_NAME_PART.test(value));
}

/** A cluster id as messages carry it. */
export const isClusterId: NameValidator = matching(CLUSTER_ID_MAX_LENGTH, CLUSTER_ID);

/**
 * The rule of each bounded name above as JSON Schema keywords (`pattern`, `maxLength`), for
 * schemas that must accept exactly what the validators accept (the forwarder's configuration
 * schema, src/forwarder/config/schema.ts). Built from the same regexes and bounds as the
 * validators, so a schema and a validator cannot disagree.
 */
export const NAME_SCHEMAS = {
  dnsLabel: { pattern: DNS_LABEL.source, maxLength: DNS_LABEL_MAX_LENGTH },
  dnsSubdomain: { pattern: DNS_SUBDOMAIN.source, maxLength: DNS_SUBDOMAIN_MAX_LENGTH },
  apiVersion: { pattern: API_VERSION.source, maxLength: API_VERSION_MAX_LENGTH },
  kind: { pattern: KIND.source, maxLength: KIND_MAX_LENGTH },
  clusterId: { pattern: CLUSTER_ID.source, maxLength: CLUSTER_ID_MAX_LENGTH },
} as const satisfies Record<string, { pattern: string; maxLength: number }>;
