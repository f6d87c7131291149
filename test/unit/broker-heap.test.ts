/**
 * The broker process's V8 heap settings (src/cli/broker-heap.ts): when the heap growing factor is set,
 * that an operator's own flag wins, and that `npm start` gives the flags that must come at start-up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { applyHeapGrowing, BROKER_NODE_FLAGS } from '../../src/cli/broker-heap.js';
import { resolveBrokerConfig, toStartOptions } from '../../src/cli/broker-config.js';

function recorder(): { set: (f: string) => void; flags: string[] } {
  const flags: string[] = [];
  return { set: (f) => flags.push(f), flags };
}

test('the heap growing factor is set from the setting', () => {
  const r = recorder();
  assert.equal(applyHeapGrowing(300, [], r.set), true);
  assert.deepEqual(r.flags, ['--heap-growing-percent=300']);
});

test('0 leaves the factor to V8', () => {
  const r = recorder();
  assert.equal(applyHeapGrowing(0, [], r.set), false);
  assert.deepEqual(r.flags, []);
});

test("an operator's --heap-growing-percent on Node's command line wins", () => {
  for (const argv of [
    ['--heap-growing-percent=50'],
    ['--heap_growing_percent', '50'],
    ['--x', '--heap-growing-percent=0'],
  ]) {
    const r = recorder();
    assert.equal(applyHeapGrowing(300, argv, r.set), false, argv.join(' '));
    assert.deepEqual(r.flags, []);
  }
  const r = recorder();
  assert.equal(applyHeapGrowing(300, ['--heap-growing-percentage'], r.set), true, 'another flag');
});

test('the setting: default 300, from flag and environment, checked, and not passed to startBroker', () => {
  assert.equal(resolveBrokerConfig({}, { env: {} }).heapGrowingPercent, 300);
  assert.equal(resolveBrokerConfig({ heapGrowingPercent: '0' } as never, { env: {} }).heapGrowingPercent, 0);
  assert.equal(
    resolveBrokerConfig({}, { env: { VELA_HEAP_GROWING_PERCENT: '150' } }).heapGrowingPercent,
    150,
  );
  assert.throws(() => resolveBrokerConfig({}, { env: { VELA_HEAP_GROWING_PERCENT: '-1' } }), /heap/i);
  assert.equal('heapGrowingPercent' in toStartOptions(resolveBrokerConfig({}, { env: {} })), false);
});

test('npm start gives the broker process the flags that must come at start-up', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const start = pkg.scripts.start!;
  const node = start.slice(start.indexOf('node '));
  assert.ok(BROKER_NODE_FLAGS.length > 0);
  for (const f of BROKER_NODE_FLAGS) assert.match(node, new RegExp(` ${f}(?= )`), f);
  assert.match(node, /dist\/cli\.js broker$/);
});
