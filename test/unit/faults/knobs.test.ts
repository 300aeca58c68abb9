/** The fault suite's knobs: a value that would make a case vacuous is refused, naming the variable. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_BLACKHOLE_MS, DEFAULT_BROKER_OUTAGE_MS, faultKnobs } from '../../faults/knobs.ts';

test('unset knobs give the defaults', () => {
  assert.deepEqual(faultKnobs({ PATH: '/bin' }), {
    objects: undefined,
    brokerOutageMs: DEFAULT_BROKER_OUTAGE_MS,
    blackholeMs: DEFAULT_BLACKHOLE_MS,
    logDir: undefined,
    ordering: undefined,
  });
});

test('valid values are used as given', () => {
  assert.deepEqual(
    faultKnobs({
      OPERLESS_FAULTS_OBJECTS: '50',
      OPERLESS_FAULTS_BROKER_OUTAGE_MS: '10000',
      OPERLESS_FAULTS_LOGS: '/tmp/logs',
      OPERLESS_FAULTS_ORDERING: 'per-key',
    }),
    { objects: 50, brokerOutageMs: 10_000, blackholeMs: DEFAULT_BLACKHOLE_MS, logDir: '/tmp/logs', ordering: 'per-key' },
  );
});

test('a zero, negative, fractional or non-numeric value is refused with the variable named', () => {
  for (const [name, value] of [
    ['OPERLESS_FAULTS_BROKER_OUTAGE_MS', '0'],
    ['OPERLESS_FAULTS_BROKER_OUTAGE_MS', '-30000'],
    ['OPERLESS_FAULTS_BROKER_OUTAGE_MS', '4999'],
    ['OPERLESS_FAULTS_BROKER_OUTAGE_MS', '30s'],
    ['OPERLESS_FAULTS_BROKER_OUTAGE_MS', ''],
    ['OPERLESS_FAULTS_OBJECTS', '0'],
    ['OPERLESS_FAULTS_OBJECTS', '1'],
    ['OPERLESS_FAULTS_OBJECTS', '12.5'],
    ['OPERLESS_FAULTS_OBJECTS', 'many'],
  ] as const) {
    assert.throws(
      () => faultKnobs({ [name]: value }),
      (err: Error) => {
        assert.ok(err.message.startsWith(`${name}=${JSON.stringify(value)} is refused`), err.message);
        assert.match(err.message, /must be an integer from \d+ to \d+/);
        return true;
      },
      `${name}=${value}`,
    );
  }
});

test('an empty log directory and a misspelt knob are refused', () => {
  assert.throws(() => faultKnobs({ OPERLESS_FAULTS_LOGS: ' ' }), /OPERLESS_FAULTS_LOGS is set but empty/);
  assert.throws(() => faultKnobs({ OPERLESS_FAULTS_OBJECT: '50' }), /OPERLESS_FAULTS_OBJECT: not a knob of the fault suite \(known: OPERLESS_FAULTS_OBJECTS/);
});

test('a blackhole too short to outlast a stalled request is refused, naming the variable', () => {
  assert.throws(() => faultKnobs({ OPERLESS_FAULTS_BLACKHOLE_MS: '0' }), /OPERLESS_FAULTS_BLACKHOLE_MS="0" is refused/);
  assert.equal(faultKnobs({ OPERLESS_FAULTS_BLACKHOLE_MS: '8000' }).blackholeMs, 8000);
});

test('an ordering that is not one is refused, naming the knob and the orderings', () => {
  for (const value of ['fifo', 'PER-KEY', '', 'both']) {
    assert.throws(
      () => faultKnobs({ OPERLESS_FAULTS_ORDERING: value }),
      (err: Error) => {
        assert.ok(err.message.startsWith(`OPERLESS_FAULTS_ORDERING=${JSON.stringify(value)} is refused: it must be one of unordered, per-key`), err.message);
        return true;
      },
      value,
    );
  }
  assert.equal(faultKnobs({ OPERLESS_FAULTS_ORDERING: 'unordered' }).ordering, 'unordered');
});
