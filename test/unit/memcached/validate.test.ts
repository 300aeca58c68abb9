import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQuantity } from '../../../src/memcached/quantity.ts';
import { specProblem } from '../../../src/memcached/validate.ts';
import { memcached } from './fixtures.ts';

test('parseQuantity: binary and decimal suffixes, exponents, milli, numbers; undefined for junk', () => {
  assert.equal(parseQuantity('256Mi'), 256 * 2 ** 20);
  assert.equal(parseQuantity('1Gi'), 2 ** 30);
  assert.equal(parseQuantity('1G'), 1e9);
  assert.equal(parseQuantity('500m'), 0.5);
  assert.equal(parseQuantity('1.5'), 1.5);
  assert.equal(parseQuantity('1e3'), 1000);
  assert.equal(parseQuantity('128974848'), 128974848);
  assert.equal(parseQuantity(2), 2);
  assert.equal(parseQuantity('12MB'), undefined);
  assert.equal(parseQuantity('lots'), undefined);
  assert.equal(parseQuantity(undefined), undefined);
});

test('a spec without resources, or with room to spare, is fine', () => {
  assert.equal(specProblem(memcached().spec), undefined);
  assert.equal(specProblem(memcached({ memoryLimitMB: 64, resources: { limits: { memory: '128Mi' } } }).spec), undefined);
  assert.equal(specProblem(memcached({ memoryLimitMB: 64, resources: { limits: { memory: '64Mi' } } }).spec), undefined);
});

test('memoryLimitMB above the container memory limit is refused with a message saying what to change', () => {
  const problem = specProblem(memcached({ memoryLimitMB: 512, resources: { limits: { memory: '256Mi' } } }).spec);
  assert.equal(problem?.reason, 'MemoryLimitTooSmall');
  assert.match(problem?.message ?? '', /memoryLimitMB is 512 MiB.*256Mi.*Lower spec\.memoryLimitMB or raise/);
});

test('a request above its limit is refused, for memory and for cpu', () => {
  const memory = specProblem(memcached({ resources: { requests: { memory: '1Gi' }, limits: { memory: '512Mi' } } }).spec);
  assert.equal(memory?.reason, 'RequestAboveLimit');
  assert.match(memory?.message ?? '', /requests\.memory \(1Gi\)/);
  const cpu = specProblem(memcached({ resources: { requests: { cpu: '2' }, limits: { cpu: '500m' } } }).spec);
  assert.match(cpu?.message ?? '', /requests\.cpu \(2\) is larger than spec\.resources\.limits\.cpu \(500m\)/);
});
