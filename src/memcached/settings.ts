/**
 * Extra memcached settings from the ConfigMap a Memcached names in `spec.configMapRef` (same
 * namespace): `memoryLimitMB` (16–65536, overrides `spec.memoryLimitMB`) and `maxConnections`
 * (1–65536, memcached `-c`). The ConfigMap is read, not owned: the controller declares it as a
 * related watch (`{ field: 'spec.configMapRef.name' }`), so a change reconciles every Memcached
 * that refers to it, and the settings' hash on the pod template rolls the pods.
 *
 * Guarantees: `configSettings` is pure and total on whatever a ConfigMap's `data` holds; an
 * unknown key, a value that is not a whole number in range, or `binaryData` is a problem
 * naming the key (typos are refused, never silently ignored); the hash depends only on the
 * settings that apply, so an unrelated edit cannot roll the pods.
 */
import { createHash } from 'node:crypto';
import type { KindRef, KubeObject } from '../index.ts';
import type { SpecProblem } from './validate.ts';

/** The settings a ConfigMap may hold, with their bounds. */
const KEYS = { memoryLimitMB: { min: 16, max: 65536 }, maxConnections: { min: 1, max: 65536 } } as const;
type Key = keyof typeof KEYS;

export type MemcachedSettings = Partial<Record<Key, number>>;

export interface ConfigMapView extends KubeObject {
  data?: Record<string, unknown>;
  binaryData?: Record<string, unknown>;
}

/** The settings with the hash that goes on the pod template, or the problem that keeps them from applying. */
export type SettingsResult = { readonly settings: MemcachedSettings; readonly hash: string } | { readonly problem: SpecProblem };

/** The settings of the ConfigMap `name` (undefined: it does not exist). Pure. */
export function configSettings(name: string, configMap: ConfigMapView | undefined): SettingsResult {
  if (!configMap) {
    return {
      problem: {
        reason: 'ConfigMapNotFound',
        message: `ConfigMap ${name} named by spec.configMapRef does not exist in this namespace; create it (keys ${Object.keys(KEYS).join(', ')}) or remove spec.configMapRef`,
      },
    };
  }
  const invalid = (message: string) => ({ problem: { reason: 'InvalidConfigMap', message: `ConfigMap ${name}: ${message}` } });
  if (configMap.binaryData && Object.keys(configMap.binaryData).length > 0) return invalid('binaryData is not read; put the settings under data');
  const settings: MemcachedSettings = {};
  for (const [key, raw] of Object.entries(configMap.data ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!Object.hasOwn(KEYS, key)) return invalid(`unknown key ${JSON.stringify(key.slice(0, 64))}; the known keys are ${Object.keys(KEYS).join(', ')}`);
    const bounds = KEYS[key as Key];
    const text = typeof raw === 'string' ? raw.trim() : '';
    const value = /^[0-9]{1,9}$/.test(text) ? Number(text) : Number.NaN;
    if (!(value >= bounds.min && value <= bounds.max))
      return invalid(`${key} must be a whole number from ${bounds.min} to ${bounds.max}, got ${JSON.stringify(String(raw).slice(0, 64))}`);
    settings[key as Key] = value;
  }
  return { settings, hash: createHash('sha256').update(JSON.stringify(settings)).digest('hex').slice(0, 16) };
}
