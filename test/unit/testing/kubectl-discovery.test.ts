/**
 * A control plane that gets a port an earlier one had forgets what kubectl cached for that
 * port (the earlier plane's CRDs may have served other versions), and nothing else.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forgetKubectlDiscovery } from '../../../src/testing/control-plane-setup.ts';

function cacheWith(...hosts: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'operless-kubecache-'));
  for (const host of hosts) {
    mkdirSync(join(dir, 'discovery', host, 'cache.example.com', 'v1beta1'), { recursive: true });
    writeFileSync(join(dir, 'discovery', host, 'servergroups.json'), '{}');
  }
  return dir;
}

test('the discovery cached for the plane port goes; other hosts and ports stay', (t) => {
  const dir = cacheWith('127.0.0.1_40001', '127.0.0.1_40002', 'example.com_443');
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  forgetKubectlDiscovery(40001, { KUBECACHEDIR: dir });
  assert.equal(existsSync(join(dir, 'discovery', '127.0.0.1_40001')), false);
  assert.equal(existsSync(join(dir, 'discovery', '127.0.0.1_40002', 'servergroups.json')), true);
  assert.equal(existsSync(join(dir, 'discovery', 'example.com_443', 'servergroups.json')), true);
});

test('without KUBECACHEDIR the cache is ~/.kube/cache; a port never cached is no error', (t) => {
  const home = mkdtempSync(join(tmpdir(), 'operless-home-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const cached = join(home, '.kube', 'cache', 'discovery', '127.0.0.1_40003');
  mkdirSync(cached, { recursive: true });
  forgetKubectlDiscovery(40003, { HOME: home });
  assert.equal(existsSync(cached), false);
  forgetKubectlDiscovery(40004, { HOME: home });
});
