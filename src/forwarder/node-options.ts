/**
 * The Node.js runtime flags the forwarder ships with, in ONE place: the image's ENTRYPOINT
 * runs `node <these flags> /app/forwarder.mjs` (infra/forwarder/Dockerfile; a unit test
 * fails when the two differ), and the benchmark spawns the bundle with them, so what is
 * measured is what ships. They are command-line flags, not NODE_OPTIONS, because Node
 * refuses most V8 flags (`--no-opt`) in NODE_OPTIONS.
 *
 * - `--max-semi-space-size=1` (MiB): V8's young generation may otherwise grow to 2 × 32 MiB
 *   under the allocation rate of a list or a resync and keep it committed; the forwarder's
 *   live set is small (≈ 18 MiB of heap with 10,000 watched objects) and its garbage
 *   short-lived. Saves ≈ 50 MiB resident at no measurable throughput cost.
 * - `--no-opt --no-maglev`: no optimizing compilers (bytecode and the Sparkplug baseline
 *   compiler only). The forwarder's work is I/O and JSON parsing in native code; the
 *   optimizers' own code pages and compile-time memory cost ≈ 10 MiB resident at 10,000
 *   objects (≈ 17 MiB at the peak of a full resync), while the throughput stays far above
 *   the 2,000 events/s target (≈ 5,200 messages per CPU second instead of ≈ 6,500, loaded
 *   machine).
 *
 * Measurements: docs/forwarder.md, "Memory and throughput". `NODE_OPTIONS` set in the pod
 * spec (the chart's `extraEnv`) still applies on top, for the flags Node allows there.
 */
export const FORWARDER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--no-opt', '--no-maglev'];
