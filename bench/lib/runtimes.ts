/**
 * The JavaScript runtimes a measurement can run the forwarder bundle under: Node.js as the
 * image ships it, and Bun and Deno, installed from npm into the version-keyed cache by
 * `src/testing/provision.ts` (targets `bun`, `deno`; bench and test only — the image and the
 * chart run Node.js).
 *
 * `parseRuntimes` reads a list such as `RUNTIMES="node,bun,bun --smol,deno"`: entries separated
 * by commas, each a runtime's name and then extra flags separated by spaces. `runtimeArgv` gives
 * the command line that runs a script under one entry:
 * - node: the image's flags (FORWARDER_NODE_FLAGS), then the entry's;
 * - deno: `run -A` (every permission, as Node.js has), the image's flags that are V8's passed
 *   through `--v8-flags` (the same engine under the same settings; Node's own
 *   `--max-old-space-size-percentage` has no Deno counterpart), then the entry's;
 * - bun: only the entry's (JavaScriptCore: none of V8's flags apply; `--smol` is its own
 *   smaller-heap mode).
 *
 * Guarantees: pure; an unknown runtime name, an empty list, or an entry given twice is an error
 * naming it.
 */
import { FORWARDER_NODE_FLAGS } from '../../src/build/forwarder-node-flags.ts';

export const RUNTIME_NAMES = ['node', 'bun', 'deno'] as const;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];

export interface RuntimeEntry {
  readonly name: RuntimeName;
  /** Flags after the runtime's own defaults (see the header). */
  readonly flags: readonly string[];
  /** The entry as written, spaces normalised: `bun --smol`. */
  readonly label: string;
}

/** Node.js options that are not V8 flags, so not passed to Deno's V8. */
const NODE_ONLY_FLAGS = ['--max-old-space-size-percentage'];

/** The image's flags that are V8's, for a V8 runtime other than Node.js. */
export const FORWARDER_V8_FLAGS: readonly string[] = FORWARDER_NODE_FLAGS.filter((flag) => !NODE_ONLY_FLAGS.includes(flag.split('=')[0]!));

/** A RUNTIMES list (default: node alone). Pure. */
export function parseRuntimes(text: string | undefined): RuntimeEntry[] {
  const entries: RuntimeEntry[] = [];
  for (const raw of (text ?? 'node').split(',')) {
    const words = raw.split(' ').filter(Boolean);
    if (words.length === 0) continue;
    const [name, ...flags] = words;
    if (!(RUNTIME_NAMES as readonly string[]).includes(name!)) {
      throw new Error(`RUNTIMES: unknown runtime ${JSON.stringify(name)} (expected one of ${RUNTIME_NAMES.join(', ')})`);
    }
    const label = words.join(' ');
    if (entries.some((e) => e.label === label)) throw new Error(`RUNTIMES: ${JSON.stringify(label)} is given twice`);
    entries.push({ name: name as RuntimeName, flags, label });
  }
  if (entries.length === 0) throw new Error(`RUNTIMES: no runtime in ${JSON.stringify(text)}`);
  return entries;
}

/** The command line running `script` under `entry`, whose executable is `executable`. Pure. */
export function runtimeArgv(entry: RuntimeEntry, executable: string, script: string): string[] {
  switch (entry.name) {
    case 'node':
      return [executable, ...FORWARDER_NODE_FLAGS, ...entry.flags, script];
    case 'deno':
      return [executable, 'run', '-A', ...(FORWARDER_V8_FLAGS.length > 0 ? [`--v8-flags=${FORWARDER_V8_FLAGS.join(',')}`] : []), ...entry.flags, script];
    case 'bun':
      return [executable, ...entry.flags, script];
  }
}
