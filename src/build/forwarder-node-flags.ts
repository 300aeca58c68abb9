/**
 * The Node.js runtime flags the forwarder ships with, in ONE place: the image's ENTRYPOINT
 * runs `node <these flags> /app/forwarder.mjs` (infra/forwarder/Dockerfile; a unit test
 * fails when the two differ), and the benchmark spawns the bundle with them, so what is
 * measured is what ships. They are command-line flags, not NODE_OPTIONS, because Node
 * refuses most V8 flags (`--no-opt`) in NODE_OPTIONS.
 *
 * - `--max-semi-space-size=1` (MiB): V8's young generation may otherwise grow to its default
 *   maximum under the allocation rate of a list or a resync and keep it committed, while the
 *   forwarder's live set is small and its garbage short-lived: the flag bounds the resident
 *   size without costing throughput.
 * - `--no-opt --no-maglev`: no optimizing compilers (bytecode and the Sparkplug baseline
 *   compiler only). The forwarder's work is I/O and JSON parsing in native code, so the
 *   optimizers' code pages and compile-time memory cost more resident memory than their
 *   speed-up is worth; the throughput stays above the forwarder's target.
 * - `--optimize-for-size`: V8 favours a small heap over speed (a smaller heap growth factor,
 *   so the garbage of a LIST is collected rather than kept committed): the resident size
 *   follows the live set of snapshots instead of the LIST's peak; the throughput stays above
 *   the forwarder's target.
 *
 * - `--max-old-space-size-percentage=50`: V8's old generation may grow to half of the memory
 *   the process may use — the container's limit (cgroup), else the machine's. Without it V8
 *   sizes its heap to the whole limit (measured under a 256 MiB cgroup: heap_size_limit 259 MiB;
 *   with it 131 MiB), so it never collects hard before the kernel kills the container; with it
 *   the other half stays for what is not V8 heap (code, buffers of request bodies, TLS). A
 *   live set past it ends in V8's out-of-memory exit (the pod restarts), as an OOM kill would.
 *
 * Measurements (every figure, before and after each flag): docs/forwarder.md, "Memory and
 * throughput". `NODE_OPTIONS` set in the pod
 * spec (the chart's `extraEnv`) still applies on top, for the flags Node allows there.
 */
export const FORWARDER_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=1',
  '--no-opt',
  '--no-maglev',
  '--optimize-for-size',
  '--max-old-space-size-percentage=50',
];
