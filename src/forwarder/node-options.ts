/**
 * The Node.js runtime options the forwarder ships with, in ONE place: the image sets them
 * as `NODE_OPTIONS` (infra/forwarder/Dockerfile; a unit test fails when the two differ),
 * and the benchmark runs the bundle with them, so what is measured is what ships.
 *
 * `--max-semi-space-size=1` (MiB): V8's young generation may otherwise grow to 2 × 32 MiB
 * under the allocation rate of a list or a resync and keep that memory committed. The
 * forwarder's live set is small (≈ 18 MiB of heap with 10,000 watched objects) and its
 * garbage short-lived, so a 1 MiB semi-space costs no measurable throughput (resync of
 * 10,000 objects: ≈ 6,500 messages per CPU second either way) and saves ≈ 50 MiB resident
 * (docs/forwarder.md, "Memory and throughput").
 *
 * Users can still override it: NODE_OPTIONS set in the pod spec (the chart's `extraEnv`)
 * replaces this value.
 */
export const FORWARDER_NODE_OPTIONS = '--max-semi-space-size=1';
