/**
 * Operless's own package.json, as the scaffold reads it: its version (the `operless`
 * dependency and the scaffold version a project records) and the dev tool versions it is
 * tested with (the pins of a generated project).
 */
import { readFileSync } from 'node:fs';
import { PROJECT_DEV_TOOLS } from './init/plan.ts';

export function operlessPackage(): { version: string; devDependencies: Record<string, string> } {
  return JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; devDependencies: Record<string, string> };
}

/** The dev tool pins of a generated project: Operless's own versions of PROJECT_DEV_TOOLS. */
export function projectToolVersions(): Record<string, string> {
  const own = operlessPackage();
  const versions: Record<string, string> = {};
  for (const tool of PROJECT_DEV_TOOLS) {
    const version = own.devDependencies[tool];
    if (version) versions[tool] = version;
  }
  return versions;
}
