/** The fault suite's knobs: a value that would make a case vacuous is refused, naming the variable. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_BROKER_OUTAGE_MS, faultKnobs } from '../../faults/knobs.ts';

test('unset knobs give the defaults', () => {
  assert.deepEqual(faultKnobs({ PATH: '/bin' }), { objects: undefined, brokerOutageMs: DEFAULT_BROKER_OUTAGE_MS, logDir: undefined });
});

test('valid values are used as given', () => {
  assert.deepEqual(faultKnobs({ OPERLESS_FAULTS_OBJECTS: '50', OPERLESS_FAULTS_BROKER_OUTAGE_MS: '10000', OPERLESS_FAULTS_LOGS: '/tmp/logs' }), { objects: 50, brokerOutageMs: 10_000, logDir: '/tmp/logs' });
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
    assert.throws(() => faultKnobs({ [name]: value }), (err: Error) => {
      assert.ok(err.message.startsWith(`${name}=${JSON.stringify(value)} is refused`), err.message);
      assert.match(err.message, /must be an integer from \d+ to \d+/);
      return true;
    }, `${name}=${value}`);
  }
});

test('an empty log directory and a misspelt knob are refused', () => {
  assert.throws(() => faultKnobs({ OPERLESS_FAULTS_LOGS: ' ' }), /OPERLESS_FAULTS_LOGS is set but empty/);
  assert.throws(() => faultKnobs({ OPERLESS_FAULTS_OBJECT: '50' }), /OPERLESS_FAULTS_OBJECT: not a knob of the fault suite \(known: OPERLESS_FAULTS_OBJECTS/);
});
