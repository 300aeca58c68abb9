/**
 * Turns a benchmark result into the markdown tables (Operless next to controller-runtime, and the
 * imitation baseline when it ran) and a hand-written SVG bar chart of convergence and lag. Pure.
 */
import { busyProcesses } from './lib/machine.ts';
import { round, type Spread } from './lib/stats.ts';
import type { BenchResult, CostResult } from './result.ts';
import { webhookTable } from './scenarios/webhooks-table.ts';
import { bulkLaneTable, failoverTable } from './scenarios/backlog-tables.ts';
import { perObjectTable } from './scenarios/per-object-table.ts';

const fmt = (x: number | undefined, unit = '') => (x === undefined || !Number.isFinite(x) ? 'n/a' : `${round(x)}${unit}`);
const fmtSpread = (s: Spread | undefined, unit = '') =>
  !s || !Number.isFinite(s.median) ? 'n/a' : s.runs > 1 ? `${round(s.median)}${unit} (${round(s.min)}–${round(s.max)})` : `${round(s.median)}${unit}`;
const ratioOf = (a: number | undefined, b: number | undefined) =>
  a !== undefined && b !== undefined && Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${round(a / b)}×` : 'n/a';

export function toMarkdown(r: BenchResult): string {
  const out: string[] = [];
  out.push(
    `Run ${r.date} (${r.mode} mode, ${r.repeat} run${r.repeat > 1 ? 's' : ''} per timed figure: median, range in parentheses) on ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memoryGiB} GiB RAM, Node ${r.machine.node}.`,
  );
  const hasBaseline =
    r.convergence.some((c) => c.rows.some((x) => x.system.startsWith('baseline'))) ||
    r.lag.some((l) => l.system.startsWith('baseline')) ||
    r.apiCost?.baseline !== undefined;
  out.push(
    `Operless side: forwarder in-process (its own process in the CPU and memory rows) → embedded SQS-compatible queue (src/local/memory-queue-server.ts) → local Lambda runner invoking the shipped function bundle; controller-runtime, where shown: the Go operator of bench/controller-runtime (controller-runtime v0.22.5, informer cache, ${r.settings.equalInvocations} workers, or as many as a row names), its own process${hasBaseline ? `; baseline (the earlier anchor, \`--baseline\`): bench/baseline (${r.settings.baselineWorkers} workers)` : ''}. Same control plane (kube-apiserver + etcd + kube-controller-manager + simulated kubelet), one system after the other, each in its own namespace.`,
  );
  out.push('');
  if (r.perObject && r.perObject.rows.length > 0) out.push(...perObjectTable(r.perObject));
  if (r.convergence.length > 0) {
    out.push('### Convergence (N new objects → all Available), seconds');
    out.push('');
    const withCr = r.convergence.some((c) => c.rows.some((x) => x.system.startsWith('controller-runtime')));
    const withBase = r.convergence.some((c) => c.rows.some((x) => x.system.startsWith('baseline')));
    const withApi = r.convergence.some((c) => c.rows.some((x) => x.apiRequests !== undefined));
    out.push(
      `| N | system | seconds | reconciles |${withCr ? ' ratio to controller-runtime |' : ''}${withBase ? ' ratio to baseline |' : ''}${withApi ? " API requests (cluster) | of which 409 | 409 on the operator's writes | SQS requests per reconcile |" : ''}`,
    );
    out.push(`| ---: | --- | ---: | ---: |${withCr ? ' ---: |' : ''}${withBase ? ' ---: |' : ''}${withApi ? ' ---: | ---: | ---: | ---: |' : ''}`);
    for (const c of r.convergence) {
      const base = c.rows.find((x) => x.system.startsWith('baseline'));
      const cr = c.rows.find((x) => x.system.startsWith('controller-runtime'));
      for (const row of c.rows) {
        const toCr = withCr ? ` ${row === cr ? '1×' : ratioOf(row.seconds.median, cr?.seconds.median)} |` : '';
        const toBase = withBase ? ` ${row === base ? '1×' : ratioOf(row.seconds.median, base?.seconds.median)} |` : '';
        const api = withApi
          ? ` ${row.apiRequests === undefined ? '—' : fmt(row.apiRequests)} | ${row.conflicts === undefined ? '—' : fmt(row.conflicts)} | ${row.operatorConflicts === undefined ? '—' : fmt(row.operatorConflicts)} | ${row.sqsRequestsPerReconcile === undefined ? '—' : fmt(row.sqsRequestsPerReconcile)} |`
          : '';
        out.push(`| ${c.n} | ${row.system} | ${fmtSpread(row.seconds)} | ${fmt(row.reconciles)} |${toCr}${toBase}${api}`);
      }
    }
    out.push('');
    if (withApi)
      out.push(
        "API requests: the whole cluster's over the run (watches excluded; the controller manager's and the simulated kubelet's count too). 409: every conflict, most of them the controller manager's own status writes; on the operator's writes: the Memcached, its status, and the Deployment and Service it applies — each one a retried reconcile.",
        '',
      );
    const largest = r.convergence.at(-1);
    const withCores = largest?.rows.filter((row) => busyProcesses(row.processCores).length > 0) ?? [];
    if (largest && withCores.length > 0) {
      out.push(
        `Where the CPU went at N = ${largest.n} (cores kept busy per process from the first create until converged, last run; ${r.machine.cpus} in all; processes under 0.05 left out):`,
        '',
      );
      for (const row of withCores)
        out.push(
          `- ${row.system}: ${busyProcesses(row.processCores)
            .map(([name, cores]) => `${name} ${fmt(cores)}`)
            .join(', ')}`,
        );
      out.push('');
    }
  }
  for (const rate of [...new Set(r.lag.map((l) => l.rate))]) {
    const rows = r.lag.filter((l) => l.rate === rate);
    const judged = rate === r.settings.lagRate;
    out.push(
      `### Lag from spec update to status (observedGeneration), ms — ${rate}/s for ${r.settings.lagSeconds} s over ${r.settings.lagPool} objects${judged ? '' : ' (heavier load, one run each; not what the targets are judged on)'}`,
    );
    out.push('');
    const base = rows.find((x) => x.system.startsWith('controller-runtime')) ?? rows.find((x) => x.system.startsWith('baseline'));
    const anchor = base?.system.startsWith('controller-runtime') ? 'controller-runtime' : 'baseline';
    out.push(`| system | p50 | p95 | p99 | lost | p50 above ${anchor} | p99 above ${anchor} | reconciles per update | machine CPU busy |`);
    out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const row of rows) {
      const above = (a: Spread, b: Spread | undefined) => (row === base || !b ? '—' : fmt(a.median - b.median, ' ms'));
      const busy = row.machineBusy.runs > 0 ? `${Math.round(row.machineBusy.median * 100)} %` : '?';
      out.push(
        `| ${row.system} | ${fmtSpread(row.p50)} | ${fmtSpread(row.p95)} | ${fmtSpread(row.p99)} | ${row.lost} | ${above(row.p50, base?.p50)} | ${above(row.p99, base?.p99)} | ${fmt(row.reconcilesPerUpdate.median)} | ${busy} |`,
      );
    }
    out.push('');
    const withCores = rows.filter((row) => busyProcesses(row.processCores).length > 0);
    if (withCores.length > 0) {
      out.push(
        `Where the CPU went during the updates (cores kept busy per process, last run; ${r.machine.cpus} in all; processes under 0.05 left out; the bench process hosts Operless's stand-ins for SQS and Lambda and the status tracker):`,
        '',
      );
      for (const row of withCores)
        out.push(
          `- ${row.system}: ${busyProcesses(row.processCores)
            .map(([name, cores]) => `${name} ${fmt(cores)}`)
            .join(', ')}`,
        );
      out.push('');
    }
  }
  if (r.apiCost) out.push(...apiCostTable(r.apiCost, r.settings.apiSyncPeriodSeconds));
  if (r.related) out.push(...relatedTables(r.related));
  if (r.webhooks) out.push(...webhookTable(r.webhooks));
  if (r.forwarder) {
    const f = r.forwarder;
    out.push(`### Forwarder (its bundle as its own process, ${f.objects} watched objects)`);
    out.push('');
    out.push('| figure | value |');
    out.push('| --- | ---: |');
    out.push(`| objects created per second (API server) | ${fmt(f.createPerSecond)} |`);
    out.push(`| messages forwarded per second while creating | ${fmt(f.liveMessagesPerSecond)} |`);
    out.push(`| resync after restart: messages per second | ${fmt(f.resyncMessagesPerSecond)} |`);
    out.push(`| resync after restart: messages per CPU second (whole process, startup and list included) | ${fmt(f.resyncMessagesPerCpuSecond)} |`);
    out.push(`| resident memory after the initial list (VmRSS) | ${fmt(f.rssMiB, ' MiB')} |`);
    out.push(`| peak resident memory (VmHWM) | ${fmt(f.peakRssMiB, ' MiB')} |`);
    out.push(`| bursts: ${f.coalescing.objects} objects × ${f.coalescing.changesPerObject} changes → messages | ${f.coalescing.messages} |`);
    out.push(`| messages per object change (per burst) | ${fmt(f.coalescing.messagesPerChange)} (${fmt(f.coalescing.messagesPerObject)}) |`);
    out.push(`| forwarder bundle | ${fmt(f.bundleBytes / 1024 / 1024, ' MiB')} |`);
    out.push('');
  }
  if (r.function) {
    const f = r.function;
    out.push(`### Function (shipped bundle, fresh Node ${r.machine.node} process, median of ${f.runs})`);
    out.push('');
    out.push('| figure | value |');
    out.push('| --- | ---: |');
    for (const b of f.bundles) {
      out.push(`| bundle ${b.name}: what a cold start loads (entry + static chunks) | ${fmt(b.bytes / 1024 / 1024, ' MiB')} |`);
      if (b.totalBytes !== undefined)
        out.push(`| bundle ${b.name}: all ${b.files} files (with lazily imported chunks) | ${fmt(b.totalBytes / 1024 / 1024, ' MiB')} |`);
    }
    out.push(`| Node bootstrap before the handler module (not counted) | ${fmt(f.bootMs, ' ms')} |`);
    out.push(`| import of the bundle | ${fmt(f.importMs, ' ms')} |`);
    out.push(`| cold: import + first reconcile | ${fmt(f.coldMs, ' ms')} |`);
    out.push(`| warm: a reconcile in the same process | ${fmt(f.warmMs, ' ms')} |`);
    out.push('');
  }
  if (r.cpu && r.cpu.length > 0) out.push(...cpuTable(r.cpu));
  if (r.bulkLane) out.push(...bulkLaneTable(r.bulkLane));
  if (r.failover) out.push(...failoverTable(r.failover));
  if (r.memory) out.push(...memoryTables(r.memory));
  if (r.cost) out.push(...costTable(r.cost, 'unordered, the default'));
  if (r.costPerKey) out.push(...costTable(r.costPerKey, 'per-key ordering: FIFO work queue and delay queue'));
  if (r.targets.length > 0) {
    out.push('### Targets (issues 8 and 21)');
    out.push('');
    out.push('| figure | target | measured | met |');
    out.push('| --- | --- | --- | --- |');
    for (const t of r.targets) out.push(`| ${t.figure} | ${t.target} | ${t.measured} | ${t.met === undefined ? '—' : t.met ? 'yes' : '**no**'} |`);
    out.push('');
  }
  return out.join('\n');
}

/** The cost model of one ordering's run. */
function costTable(c: CostResult, ordering: string): string[] {
  return [
    `### Cost per million reconciles at list price, ${ordering} (${c.prices.source})`,
    '',
    '| item | measured | $ per million reconciles |',
    '| --- | ---: | ---: |',
    `| SQS requests (send, receive incl. empty polls, delete) | ${fmt(c.perMillion.sqsRequestsPerReconcile)} per reconcile | ${fmt(c.perMillion.sqs)} |`,
    `| Lambda requests | ${fmt(c.perMillion.invocationsPerReconcile)} invocations per reconcile | ${fmt(c.perMillion.lambdaRequests)} |`,
    `| Lambda duration, arm64, ${c.memoryMB} MB | ${fmt(c.perMillion.msPerInvocation)} ms per invocation | ${fmt(c.perMillion.lambdaDuration)} |`,
    `| **total** | from ${c.reconciles} reconciles in the ${c.from} run | **${fmt(c.perMillion.total)}** |`,
    `| always-on controller pod (Fargate arm64 0.25 vCPU / 0.5 GB) | per month, any number of reconciles | ${fmt(c.podPerMonth)} per month |`,
    '',
  ];
}

const verbs = (m: Record<string, number>) =>
  Object.entries(m)
    .sort()
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none';

/** API requests per reconcile: Operless, controller-runtime and the baseline when they ran, each with its requests by verb. */
function apiCostTable(a: NonNullable<BenchResult['apiCost']>, syncPeriodSeconds: number | undefined): string[] {
  const sides = [
    { name: 'Operless', cost: a.operless },
    ...(a.controllerRuntime ? [{ name: 'controller-runtime', cost: a.controllerRuntime }] : []),
    ...(a.baseline ? [{ name: 'baseline', cost: a.baseline }] : []),
  ];
  const out = [`### Kubernetes API requests per reconcile (apiserver_request_total, ${a.operless.objects} objects)`, ''];
  if (a.controllerRuntime)
    out.push(
      `controller-runtime reads from its informer cache: a no-op reconcile of a cached controller costs no request. Its event-driven no-op is an external trigger (a GenericEvent); its periodic resync is its cache's own${syncPeriodSeconds ? ` (sync period shortened to ${syncPeriodSeconds} s for the window)` : ''}, which replays every cached object as an update event. Operless reads the live object and its children from the API server on every reconcile.`,
      '',
    );
  out.push(`| reconcile | ${sides.map((x) => x.name).join(' | ')} | ${sides.map((x) => `${x.name} by verb and resource`).join(' | ')} |`);
  out.push(`| --- | ${sides.map(() => '---:').join(' | ')} | ${sides.map(() => '---').join(' | ')} |`);
  const windows = [
    { label: 'first', pick: (c: typeof a.operless) => c.first },
    { label: 'no-op, event-driven (Requeue)', pick: (c: typeof a.operless) => c.noopEvent },
    { label: 'no-op, periodic resync', pick: (c: typeof a.operless) => c.noop },
  ];
  for (const w of windows)
    out.push(
      `| ${w.label} | ${sides.map((x) => fmt(w.pick(x.cost).perReconcile)).join(' | ')} | ${sides.map((x) => verbs(w.pick(x.cost).byVerb)).join(' | ')} |`,
    );
  out.push('');
  return out;
}

/** CPU of the always-on process per 1000 reconciles. */
function cpuTable(rows: NonNullable<BenchResult['cpu']>): string[] {
  const out = [`### CPU of the always-on side in the cluster, convergence of ${rows[0]!.objects} new objects`, ''];
  out.push(
    "User + system CPU seconds of the process that runs all the time (`/proc/<pid>/stat`), from the first create until every object is Available. Operless's reconciles run in Lambda (see the cost model).",
  );
  out.push('');
  out.push('| system | process measured | seconds | reconciles | CPU seconds | per 1000 reconciles | per 1000 objects |');
  out.push('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const c of rows)
    out.push(
      `| ${c.system} | ${c.process} | ${fmt(c.seconds)} | ${c.reconciles} | ${fmt(c.cpuSeconds)} | ${fmt(c.perThousandReconciles)} | ${fmt(c.perThousandObjects)} |`,
    );
  out.push('');
  return out;
}

/** Always-on memory holding N objects, and the forwarder's relist. */
function memoryTables(m: NonNullable<BenchResult['memory']>): string[] {
  const mib = (x: number | undefined) => fmt(x, ' MiB');
  const out = ['### Always-on memory in the cluster, holding N watched objects (half Memcacheds, half Deployments they control)', ''];
  out.push(
    `Each process on its own, once its watches synced and ${m.settleMs / 1000} s passed: VmRSS (private RssAnon in parentheses) as the median of ${m.samples} samples 250 ms apart, and VmHWM (peak, the initial LIST included). The forwarder as it ships (its bundle, the image's Node.js flags, \`resyncOnStart: false\`); controller-runtime with its informers' events gated off (it holds the same objects and reconciles nothing). A bare \`node\` under the same flags: ${mib(m.bareNode.rss)} (${mib(m.bareNode.anon)}).`,
  );
  out.push('');
  const withCr = m.rows.some((r) => r.controllerRuntime);
  out.push(
    `| objects | forwarder VmRSS (anon) | forwarder peak | forwarder synced in |${withCr ? ' controller-runtime VmRSS (anon) | controller-runtime peak | controller-runtime synced in | forwarder ÷ controller-runtime |' : ''}`,
  );
  out.push(`| ---: | ---: | ---: | ---: |${withCr ? ' ---: | ---: | ---: | ---: |' : ''}`);
  for (const r of m.rows) {
    const f = r.forwarder;
    const c = r.controllerRuntime;
    const cr = withCr ? ` ${c ? `${mib(c.rss)} (${mib(c.anon)})` : 'n/a'} | ${mib(c?.peak)} | ${fmt(c?.syncSeconds, ' s')} | ${ratioOf(f.rss, c?.rss)} |` : '';
    out.push(`| ${r.objects} | ${mib(f.rss)} (${mib(f.anon)}) | ${mib(f.peak)} | ${fmt(f.syncSeconds, ' s')} |${cr}`);
  }
  out.push('');
  const rl = m.relist;
  out.push(`### The forwarder's relist of ${rl.primaries} primaries on one queue`, '');
  out.push(
    'The forwarder as it ships (primaries only, default `resyncOnStart` and buffer) starts over the objects above; every message is read back from the queue and counted per key.',
  );
  out.push('');
  out.push('| seconds, start to last message | messages | keys | most messages of one key | dropped | resyncs | VmRSS at the end | peak (VmHWM) |');
  out.push('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  out.push(
    `| ${fmt(rl.seconds)} | ${rl.messages} | ${rl.keys} | ${rl.maxMessagesPerKey} | ${rl.dropped} | ${rl.resyncs} | ${mib(rl.rssMiB)} | ${mib(rl.peakMiB)} |`,
  );
  out.push('');
  return out;
}

const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** Two grouped bar charts side by side: convergence seconds per N, lag percentiles per system. */
/** The related-objects scenario: lag and cost per ConfigMap change. */
function relatedTables(rel: NonNullable<BenchResult['related']>): string[] {
  const out = [`### Related objects: a ConfigMap change referred to by ${rel.referring} of ${rel.objects} Memcacheds (Operless, shipped related watch)`, ''];
  out.push(
    "Lag: ConfigMap update sent → the new settings hash seen on each referring Deployment's pod template, ms. API requests: whole cluster (watches excluded) until the rollouts are done and the function is quiet.",
  );
  out.push('');
  out.push('| change | p50 | p95 | max | lost | reconciles, referring | messages by reason | reconciles, others | API requests | by verb and resource |');
  out.push('| ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |');
  for (const [i, u] of rel.updates.entries()) {
    out.push(
      `| ${i + 1} | ${fmt(u.p50)} | ${fmt(u.p95)} | ${fmt(u.max)} | ${u.lost} | ${u.referringReconciles} | ${verbs(u.referringByReason)} | ${u.otherReconciles} | ${u.apiRequests} | ${verbs(u.apiByVerb)} |`,
    );
  }
  const busy = rel.machineBusy === undefined ? '?' : `${Math.round(rel.machineBusy * 100)} %`;
  out.push(`| all | ${fmt(rel.lag.p50)} | ${fmt(rel.lag.p95)} | ${fmt(rel.lag.max)} | | | | | | machine CPU busy ${busy} |`);
  out.push('');
  const o = rel.operator;
  out.push(
    `With the controller manager and the simulated kubelet stopped (requests of the forwarder and the function only; the forwarder only watches): ${o.apiRequests} requests for one change, ${fmt(o.perReferring)} per referring object (${verbs(o.byVerb)}); ${o.referringReconciles} reconciles of the referring objects (messages: ${verbs(o.referringByReason)}), ${o.otherReconciles} of the others.`,
  );
  out.push('');
  return out;
}

export function toSvg(r: BenchResult): string {
  const W = 900;
  const H = 360;
  const parts: string[] = [];
  const panel = (x0: number, title: string, groups: { label: string; bars: { name: string; value: number }[] }[], unit: string) => {
    const w = W / 2 - 40;
    const top = 50;
    const bottom = H - 70;
    const max = Math.max(1e-9, ...groups.flatMap((g) => g.bars.map((b) => (Number.isFinite(b.value) ? b.value : 0))));
    parts.push(`<text x="${x0 + w / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`);
    parts.push(`<line x1="${x0}" y1="${bottom}" x2="${x0 + w}" y2="${bottom}" stroke="#333"/>`);
    const gw = w / Math.max(1, groups.length);
    groups.forEach((g, gi) => {
      const bw = Math.min(40, (gw - 20) / Math.max(1, g.bars.length));
      g.bars.forEach((b, bi) => {
        const v = Number.isFinite(b.value) ? b.value : 0;
        const h = ((bottom - top) * v) / max;
        const x = x0 + gi * gw + 10 + bi * bw;
        parts.push(
          `<rect x="${x}" y="${bottom - h}" width="${bw - 4}" height="${h}" fill="${COLORS[bi % COLORS.length]}"><title>${esc(b.name)}: ${round(v)} ${unit}</title></rect>`,
        );
        parts.push(`<text x="${x + (bw - 4) / 2}" y="${bottom - h - 4}" text-anchor="middle" font-size="10">${round(v)}</text>`);
      });
      parts.push(`<text x="${x0 + gi * gw + gw / 2}" y="${bottom + 16}" text-anchor="middle" font-size="12">${esc(g.label)}</text>`);
    });
    parts.push(`<text x="${x0}" y="${top - 8}" font-size="11" fill="#555">${esc(unit)}</text>`);
  };
  const convSystems = [...new Set(r.convergence.flatMap((c) => c.rows.map((x) => x.system)))];
  panel(
    20,
    'Convergence of N new objects',
    r.convergence.map((c) => ({ label: `N = ${c.n}`, bars: c.rows.map((x) => ({ name: x.system, value: x.seconds.median })) })),
    'seconds (lower is better)',
  );
  const lag = r.lag.filter((l) => l.rate === r.settings.lagRate);
  const lagSystems = lag.map((l) => l.system);
  panel(
    W / 2 + 20,
    `Lag from update to status, ${r.settings.lagRate} updates/s`,
    ['p50', 'p95', 'p99'].map((p) => ({ label: p, bars: lag.map((l) => ({ name: l.system, value: l[p as 'p50' | 'p95' | 'p99'].median })) })),
    'milliseconds (lower is better)',
  );
  const legend = (systems: string[], x0: number) =>
    systems
      .map(
        (s, i) =>
          `<rect x="${x0}" y="${H - 44 + i * 0}" width="0" height="0"/>` +
          `<rect x="${x0 + (i % 2) * 210}" y="${H - 40 + Math.floor(i / 2) * 16}" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/><text x="${x0 + 14 + (i % 2) * 210}" y="${H - 31 + Math.floor(i / 2) * 16}" font-size="11">${esc(s)}</text>`,
      )
      .join('');
  parts.push(legend(convSystems, 20));
  parts.push(legend(lagSystems, W / 2 + 20));
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>${parts.join('')}</svg>\n`;
}
