/**
 * Names in a scaffolded project, checked and derived in one place (pure): the API group
 * (a DNS-1123 subdomain), the version (`v1`, `v1beta1`, `v1alpha1`), the kind (PascalCase),
 * the project name (an npm package name that is also a DNS label), and what follows from
 * them — the plural used in REST paths, file and function names, CloudFormation names.
 *
 * The checks are the contract's validators (contract/names.ts), so a scaffolded name is one
 * that every message, controller and CRD accepts. Every check throws a `ScaffoldError` whose message says what was wrong, shows the value,
 * and gives a valid example, so the CLI can print it as is.
 */

import { isConventionalVersion, isDns1035Label, isDnsLabel, isDnsSubdomain, isKind } from '../contract/names.ts';

export class ScaffoldError extends Error {
  override readonly name = 'ScaffoldError';
}

/** The project's domain, e.g. `example.com`: a DNS subdomain with at least one dot. */
export function checkDomain(domain: string): string {
  if (!isDnsSubdomain(domain) || !domain.includes('.')) {
    throw new ScaffoldError(`--domain ${JSON.stringify(domain)} must be a lower-case DNS name with a dot, e.g. example.com`);
  }
  return domain;
}

/** The project's name: used as the npm package name and the serverless service name. */
export function checkProjectName(name: string): string {
  if (name.length > 40 || !isDns1035Label(name)) {
    throw new ScaffoldError(
      `project name ${JSON.stringify(name)} must be lower-case letters, digits and dashes, start with a letter, at most 40 characters (e.g. my-operator); pass --name`,
    );
  }
  return name;
}

/**
 * The full API group: a group without a dot gets the project's domain appended (like
 * kubebuilder: `--group cache` in domain `example.com` is `cache.example.com`).
 */
export function fullGroup(group: string, domain: string): string {
  checkGroup(group);
  const full = group.includes('.') ? group : `${group}.${domain}`;
  if (full.length > 253) throw new ScaffoldError(`API group ${full} is longer than 253 characters`);
  return full;
}

/** The `--group` as given: one DNS-1123 label (`cache`) or a full DNS-1123 subdomain. */
export function checkGroup(group: string): string {
  if (!isDnsLabel(group) && !isDnsSubdomain(group)) {
    throw new ScaffoldError(
      `--group ${JSON.stringify(group)} must be a DNS-1123 name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. cache)`,
    );
  }
  return group;
}

export function checkVersion(version: string): string {
  if (!isConventionalVersion(version)) {
    throw new ScaffoldError(`--version ${JSON.stringify(version)} must look like v1, v1beta1 or v1alpha1`);
  }
  return version;
}

export function checkKind(kind: string): string {
  if (!isKind(kind)) {
    throw new ScaffoldError(`--kind ${JSON.stringify(kind)} must be PascalCase: a capital letter, then letters and digits (e.g. Memcached, CacheCluster)`);
  }
  return kind;
}

/** The lower-case plural Kubernetes uses in REST paths (kubebuilder's rules). */
export function pluralOf(kind: string): string {
  const lower = kind.toLowerCase();
  if (/(s|x|z|ch|sh)$/.test(lower)) return `${lower}es`;
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  return `${lower}s`;
}

/** `CacheCluster` → `cache-cluster`: file and directory names, function names. */
export function kebab(kind: string): string {
  return kind.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

/** `CacheCluster` → `cacheCluster`: TypeScript identifiers and serverless function names. */
export function camel(kind: string): string {
  return kind.charAt(0).toLowerCase() + kind.slice(1);
}

/** `CacheCluster` → `CACHE_CLUSTER`: constant names. */
export function constant(kind: string): string {
  return kebab(kind).replace(/-/g, '_').toUpperCase();
}
