/**
 * Label selector syntax, checked when the forwarder's config is read, so a typo is reported
 * with its watch's path at start-up instead of as an API server 400 on every LIST.
 *
 * The grammar is the API server's (`labels.Parse`): requirements separated by commas —
 * `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`;
 * a key is an optional DNS-subdomain prefix and `/` plus a name of at most 63 characters;
 * a value is empty or at most 63 characters. Pure.
 */

import { isDnsSubdomain, isLabelValue, isQualifiedName } from '../../contract/names.ts';

function keyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && !isDnsSubdomain(prefix)) return `"${key}": the prefix before "/" must be a DNS subdomain`;
  if (name.includes('/') || !isQualifiedName(name))
    return `"${key}": a label key is at most 63 characters, letters, digits, "-", "_", "." and starts and ends with a letter or digit`;
  return undefined;
}

function valueProblem(value: string): string | undefined {
  return isLabelValue(value)
    ? undefined
    : `"${value}": a label value is empty or at most 63 characters, letters, digits, "-", "_", "." and starts and ends with a letter or digit`;
}

/** Splits on the commas that separate requirements (not the ones inside `in (…)`). */
function requirements(selector: string): string[] | undefined {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    if (depth < 0 || depth > 1) return undefined;
    if (c === ',' && depth === 0) {
      parts.push(selector.slice(start, i).trim());
      start = i + 1;
    }
  }
  if (depth !== 0) return undefined;
  parts.push(selector.slice(start).trim());
  return parts;
}

/** What is wrong with a label selector, or undefined when the API server would accept it. */
export function labelSelectorProblem(selector: string): string | undefined {
  const parts = requirements(selector);
  if (!parts) return 'unbalanced parentheses';
  for (const part of parts) {
    if (part === '') return 'an empty requirement (two commas in a row, or a leading or trailing comma)';
    const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(part);
    if (set) {
      const values = set[3]!.split(',').map((v) => v.trim());
      const problem = keyProblem(set[1]!) ?? values.map(valueProblem).find((p) => p !== undefined);
      if (problem) return problem;
      continue;
    }
    const compare = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part);
    if (compare) {
      const problem = keyProblem(compare[1]!) ?? valueProblem(compare[3]!);
      if (problem) return problem;
      continue;
    }
    const exists = /^(!?)\s*(\S+)$/.exec(part);
    if (exists) {
      const problem = keyProblem(exists[2]!);
      if (problem) return problem;
      continue;
    }
    return `"${part}" is not a requirement (key, !key, key=value, key!=value, key in (a,b), key notin (a,b))`;
  }
  return undefined;
}
