/**
 * Authorization decisions (RocketMQ ACL 2.0): resource patterns (exact, prefix, type wildcard, `*`),
 * actions (any one requested suffices; All covers every action), source IP ranges, the most
 * specific entry deciding and Deny winning among equally specific ones.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authorize, compileEntry, decide, type AccessRequest } from '../../src/broker/auth/authorizer.js';
import { compareSpecificity, matchesResource, parseResource } from '../../src/broker/auth/resource.js';
import { inRange, parseIpRange, peerAddress } from '../../src/broker/auth/ip-range.js';
import type { Action, Decision, PolicyEntry } from '../../src/broker/auth/model.js';
import { isVelaError } from '../../src/common/errors.js';

const entry = (
  resource: string,
  actions: Action[],
  decision: Decision,
  sourceIps: string[] = [],
): PolicyEntry => ({
  resource,
  actions,
  decision,
  sourceIps,
});
const topic = (name: string, ...actions: Action[]): AccessRequest => ({ type: 'Topic', name, actions });
const group = (name: string, ...actions: Action[]): AccessRequest => ({ type: 'Group', name, actions });
const allowed = (entries: PolicyEntry[], r: AccessRequest, ip = '10.0.0.1') =>
  decide(entries.map(compileEntry), r, ip).allowed;

test('resource patterns: exact, prefix, type wildcard, any', () => {
  const cases: [string, 'Topic' | 'Group', string, boolean][] = [
    ['Topic:orders', 'Topic', 'orders', true],
    ['Topic:orders', 'Topic', 'orders-eu', false],
    ['Topic:orders', 'Group', 'orders', false],
    ['Topic:order*', 'Topic', 'orders-eu', true],
    ['Topic:order*', 'Topic', 'order', true],
    ['Topic:order*', 'Topic', 'ord', false],
    ['Topic:*', 'Topic', 'anything', true],
    ['Topic:*', 'Group', 'anything', false],
    ['Group:G_*', 'Group', 'G_1', true],
    ['*', 'Group', 'x', true],
    ['*', 'Topic', 'y', true],
    ['topic:ns%orders', 'Topic', 'ns%orders', true],
  ];
  for (const [pattern, type, name, want] of cases) {
    assert.equal(matchesResource(parseResource(pattern), type, name), want, `${pattern} vs ${type}:${name}`);
  }
  assert.equal(parseResource('topic:orders').key, 'Topic:orders', 'canonical type name');
  assert.equal(parseResource(' Group:* ').key, 'Group:*');
});

test('resource patterns: malformed keys are ILLEGAL_ACL', () => {
  for (const bad of ['', 'orders', 'Queue:x', 'Topic:', 'Topic:a b', 'Topic:a*b', 'Topic:**', 'Topic:a/b']) {
    assert.throws(
      () => parseResource(bad),
      (e: unknown) => isVelaError(e, 'ILLEGAL_ACL'),
      JSON.stringify(bad),
    );
  }
});

test('specificity: exact > longer prefix > shorter prefix > Type:* > *', () => {
  const order = ['Topic:orders', 'Topic:order*', 'Topic:ord*', 'Topic:*', '*'].map(parseResource);
  for (let i = 0; i + 1 < order.length; i++) {
    assert.ok(compareSpecificity(order[i]!, order[i + 1]!) > 0, `${order[i]!.key} over ${order[i + 1]!.key}`);
    assert.ok(compareSpecificity(order[i + 1]!, order[i]!) < 0);
  }
  assert.equal(compareSpecificity(parseResource('Topic:a*'), parseResource('Topic:b*')), 0);
});

test('no matching entry: denied', () => {
  assert.equal(allowed([], topic('t', 'Pub')), false);
  assert.equal(allowed([entry('Topic:other', ['Pub'], 'Allow')], topic('t', 'Pub')), false);
  assert.equal(allowed([entry('Topic:t', ['Sub'], 'Allow')], topic('t', 'Pub')), false, 'another action');
});

test('actions: any requested action matched by the entry; All covers every action', () => {
  const e = [entry('Topic:t', ['Sub'], 'Allow')];
  assert.equal(allowed(e, topic('t', 'Pub', 'Sub')), true, 'a route query asks Pub or Sub');
  assert.equal(allowed([entry('Topic:t', ['All'], 'Allow')], topic('t', 'Pub')), true);
  assert.equal(allowed([entry('Topic:t', ['All'], 'Allow')], topic('t', 'Update', 'Get')), true);
});

test('the most specific entry decides', () => {
  const e = [entry('Topic:*', ['Pub', 'Sub'], 'Deny'), entry('Topic:orders', ['Pub'], 'Allow')];
  assert.equal(allowed(e, topic('orders', 'Pub')), true, 'exact Allow over Topic:* Deny');
  assert.equal(allowed(e, topic('orders', 'Sub')), false, 'only Topic:* matches Sub: Deny');
  assert.equal(allowed(e, topic('payments', 'Pub')), false);
  const p = [entry('Topic:order*', ['Pub'], 'Allow'), entry('Topic:orders-secret*', ['Pub'], 'Deny')];
  assert.equal(allowed(p, topic('orders-eu', 'Pub')), true);
  assert.equal(allowed(p, topic('orders-secret-1', 'Pub')), false, 'the longer prefix decides');
  // An exact Deny on Pub also refuses a route query (Pub or Sub): the entry matches one of them.
  const q = [entry('Topic:*', ['Pub', 'Sub'], 'Allow'), entry('Topic:secret', ['Pub'], 'Deny')];
  assert.equal(allowed(q, topic('secret', 'Pub', 'Sub')), false);
  assert.equal(allowed(q, topic('secret', 'Sub')), true);
});

test('deny wins among equally specific entries, whatever their order', () => {
  const a = entry('Topic:t', ['Pub'], 'Allow');
  const d = entry('Topic:t', ['Pub', 'Sub'], 'Deny');
  assert.equal(allowed([a, d], topic('t', 'Pub')), false);
  assert.equal(allowed([d, a], topic('t', 'Pub')), false);
  const pa = entry('Topic:ab*', ['Pub'], 'Allow');
  const pd = entry('Topic:ac*', ['Pub'], 'Deny');
  assert.equal(
    allowed([pa, pd], topic('abc', 'Pub')),
    true,
    'a same-length prefix that does not match is no rival',
  );
  const anyAllow = entry('*', ['All'], 'Allow');
  const anyDeny = entry('*', ['Pub'], 'Deny');
  assert.equal(allowed([anyAllow, anyDeny], group('g', 'Pub')), false);
  assert.equal(allowed([anyAllow, anyDeny], group('g', 'Sub')), true);
});

test('source IPs: single addresses and CIDR ranges, v4 and v6, v4-mapped peers', () => {
  const r = (s: string) => parseIpRange(s);
  assert.ok(inRange(r('192.168.1.0/24'), '192.168.1.10'));
  assert.ok(!inRange(r('192.168.1.0/24'), '192.168.2.10'));
  assert.ok(inRange(r('192.168.1.10'), '192.168.1.10'));
  assert.ok(!inRange(r('192.168.1.10'), '192.168.1.11'));
  assert.ok(inRange(r('10.0.0.0/8'), '::ffff:10.1.2.3'), 'IPv4-mapped IPv6 peer');
  assert.ok(inRange(r('0.0.0.0/0'), '8.8.8.8'));
  assert.ok(inRange(r('2001:db8:85a3::/48'), '2001:0db8:85a3:0000:0000:8a2e:0370:7334'));
  assert.ok(!inRange(r('2001:db8:85a3::/48'), '2001:db8:85a4::1'));
  assert.ok(inRange(r('::1'), '::1'));
  assert.ok(!inRange(r('::1/128'), '127.0.0.1'), 'families do not mix');
  assert.ok(!inRange(r('127.0.0.1'), 'not-an-ip'));
  for (const bad of [
    '',
    '192.168.1.256',
    '192.168.1.0/33',
    '2001:db8::/129',
    'localhost',
    '10.0.0.0/',
    '1.2.3.4/x',
  ]) {
    assert.throws(
      () => parseIpRange(bad),
      (e: unknown) => isVelaError(e, 'ILLEGAL_ACL'),
      JSON.stringify(bad),
    );
  }
});

test('peerAddress strips the port from every transport form', () => {
  assert.equal(peerAddress('127.0.0.1:5555'), '127.0.0.1');
  assert.equal(peerAddress('[::1]:5555'), '::1');
  assert.equal(peerAddress('::1:5555'), '::1');
  assert.equal(peerAddress('::ffff:10.0.0.1:443'), '::ffff:10.0.0.1');
  assert.equal(peerAddress('ipv4:10.0.0.1:80'), '10.0.0.1');
});

test('an entry applies only from its source IPs', () => {
  const e = [
    entry('Topic:t', ['Pub'], 'Allow', ['10.0.0.0/8']),
    entry('Topic:t', ['Pub'], 'Deny', ['10.9.0.0/16']),
  ];
  assert.equal(allowed(e, topic('t', 'Pub'), '10.1.1.1'), true);
  assert.equal(allowed(e, topic('t', 'Pub'), '10.9.1.1'), false, 'the Deny applies there and wins');
  assert.equal(allowed(e, topic('t', 'Pub'), '192.168.0.1'), false, 'no entry applies');
});

test('authorize checks every resource and names the first refused one, as FORBIDDEN', () => {
  const entries = [entry('Group:G', ['Sub'], 'Allow'), entry('Topic:t', ['Pub'], 'Allow')].map(compileEntry);
  authorize('alice', entries, [group('G', 'Sub')], '10.0.0.1');
  assert.throws(
    () => authorize('alice', entries, [group('G', 'Sub'), topic('t', 'Sub')], '10.0.0.1'),
    (e: unknown) =>
      isVelaError(e, 'ACL_FORBIDDEN') && e.code === 40300 && /User:alice may not Sub Topic:t/.test(e.message),
  );
});
