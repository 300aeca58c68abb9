/**
 * The benchmark's simulated kubelet (bench/lib/watched-pod-simulator.ts: watch-driven) as a process of its own, so the benchmark can
 * pin it with the control plane (bench/lib/pinning.ts): `node bench/pod-simulator-child.ts
 * <kubeconfig>`. It says `{"event":"ready"}` on stdout once its watch listed every pod, and on
 * SIGTERM stops after the status writes in flight.
 */
import { createKubeClient } from '../src/kube/client.ts';
import { createTransport } from '../src/kube/transport.ts';
import { loadKubeConfig } from '../src/kube/kubeconfig.ts';
import { startWatchedPodSimulator } from './lib/watched-pod-simulator.ts';

const kubeconfigPath = process.argv[2];
if (!kubeconfigPath) {
  process.stderr.write('usage: node bench/pod-simulator-child.ts <kubeconfig>\n');
  process.exit(2);
}
const kubeConfig = await loadKubeConfig();
kubeConfig.loadFromFile(kubeconfigPath);
const simulator = startWatchedPodSimulator(kubeConfig, createKubeClient(createTransport(kubeConfig), { fieldManager: 'bench-kubelet' }));
await simulator.ready;
process.stdout.write(`${JSON.stringify({ event: 'ready' })}\n`);
// A bench process that ends without stopping it (killed by a signal) takes it along.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 1000).unref();
process.once('SIGTERM', () => {
  void simulator.stop().then(() => process.exit(0));
});
