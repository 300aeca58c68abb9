/**
 * The pinning of the benchmark (bench/lib/pinning.ts): CPU lists read from /proc, folded over a
 * process's threads, and checked against what each side should run on; and a real process
 * pinned with taskset and read back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { allCpus, cpusAllowedOf, describePins, foldThreadCpus, parseCpuList, pinProcess, threadCpus, verifyPins } from '../../../bench/lib/pinning.ts';

test('parseCpuList reads single CPUs, ranges and their mix, sorted and distinct', () => {
  assert.deepEqual(parseCpuList('0'), [0]);
  assert.deepEqual(parseCpuList('0-1'), [0, 1]);
  assert.deepEqual(parseCpuList('3,0-2,2'), [0, 1, 2, 3]);
  assert.deepEqual(parseCpuList(' 1 \n'), [1]);
});

test('parseCpuList refuses what is not a CPU list, naming it', () => {
  assert.throws(() => parseCpuList(''), /not a CPU list: ""/);
  assert.throws(() => parseCpuList('a-b'), /not a CPU list/);
  assert.throws(() => parseCpuList('3-1'), /runs backwards/);
});

test('cpusAllowedOf finds Cpus_allowed_list in a /proc status text, not Cpus_allowed', () => {
  const status = 'Name:\tkube-apiserver\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed:\t1\n';
  assert.equal(cpusAllowedOf(status), '0-1');
  assert.equal(cpusAllowedOf('Name:\tx\n'), undefined);
});

test('foldThreadCpus gives one list when every thread agrees and shows a thread that does not', () => {
  assert.equal(foldThreadCpus(['0', '0', '0-0']), '0');
  assert.equal(foldThreadCpus(['1', '0-1', '1']), '1 | 0,1');
  assert.equal(foldThreadCpus([]), '?');
});

test('verifyPins: pinned, a process on the wrong CPUs is not ok; unpinned, any CPUs are reported as they are', () => {
  const mine = threadCpus(process.pid)!;
  const wrong = mine === '0' ? '1' : '0';
  const [pinned] = verifyPins([{ name: 'bench process', pid: process.pid, cpus: wrong }], 'pinned');
  assert.equal(pinned!.ok, false);
  assert.equal(pinned!.allowed, mine);
  assert.match(describePins([pinned!]), new RegExp(`bench process \\(pid ${process.pid}\\) CPUs ${mine} — expected ${wrong}`));
  const [unpinned] = verifyPins([{ name: 'bench process', pid: process.pid, cpus: wrong }], 'unpinned');
  assert.equal(unpinned!.ok, true);
  const [gone] = verifyPins([{ name: 'gone', pid: 2 ** 30, cpus: '0' }], 'pinned');
  assert.equal(gone!.allowed, 'gone');
  assert.equal(gone!.ok, false);
});

test('pinProcess moves every thread of a running process, and threadCpus reads it back', { skip: cpus().length < 2 ? 'needs two CPUs' : false }, async () => {
  // A Node child has several threads (V8 platform workers, libuv): -a must move them all.
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
  try {
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(threadCpus(child.pid!), allCpus());
    pinProcess(child.pid!, '1');
    assert.equal(threadCpus(child.pid!), '1');
    const [report] = verifyPins([{ name: 'child', pid: child.pid!, cpus: '1' }], 'pinned');
    assert.equal(report!.ok, true);
  } finally {
    child.kill('SIGKILL');
  }
});
