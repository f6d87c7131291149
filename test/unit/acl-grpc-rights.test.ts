/**
 * What each gRPC RPC needs of the user (RocketMQ's DefaultAuthorizationContextBuilder for gRPC, plus
 * Vela's pull RPCs as RocketMQ's Remoting counterparts), with namespaced names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accessRequests } from '../../src/protocol/auth.js';
import { isVelaError } from '../../src/common/errors.js';

const T = { name: 'orders' };
const G = { name: 'billing' };
const Q = { topic: T, id: 0 };
const rights = (method: string, req: object, ns = '') =>
  accessRequests(method, req, ns).map((r) => `${r.type}:${r.name} ${r.actions.join('|')}`);

test('each RPC asks RocketMQ’s actions on its topic and group', () => {
  const cases: [string, object, string[]][] = [
    ['SendMessage', { messages: [{ topic: T }, { topic: T }] }, ['Topic:orders Pub']],
    ['EndTransaction', { topic: T }, ['Topic:orders Pub']],
    ['RecallMessage', { topic: T }, ['Topic:orders Pub']],
    ['QueryRoute', { topic: T }, ['Topic:orders Pub|Sub']],
    ['QueryAssignment', { topic: T, group: G }, ['Group:billing Sub', 'Topic:orders Sub']],
    ['ReceiveMessage', { group: G, message_queue: Q }, ['Group:billing Sub', 'Topic:orders Sub']],
    ['AckMessage', { topic: T, group: G }, ['Group:billing Sub', 'Topic:orders Sub']],
    ['ForwardMessageToDeadLetterQueue', { topic: T, group: G }, ['Group:billing Sub', 'Topic:orders Sub']],
    ['ChangeInvisibleDuration', { topic: T, group: G }, ['Group:billing Sub']],
    ['Heartbeat', { group: G, client_type: 2 }, ['Group:billing Sub']],
    ['Heartbeat', { group: G, client_type: 3 }, ['Group:billing Sub']],
    ['Heartbeat', { client_type: 1 }, []],
    ['NotifyClientTermination', { group: G }, ['Group:billing Sub']],
    ['NotifyClientTermination', {}, []],
    ['PullMessage', { group: G, message_queue: Q }, ['Group:billing Sub', 'Topic:orders Sub']],
    ['UpdateOffset', { group: G, message_queue: Q }, ['Group:billing Sub|Update', 'Topic:orders Sub|Update']],
    ['GetOffset', { group: G, message_queue: Q }, ['Group:billing Sub|Get', 'Topic:orders Sub|Get']],
    ['QueryOffset', { message_queue: Q }, ['Topic:orders Sub|Get']],
    ['SyncLiteSubscription', {}, []],
    [
      'Telemetry',
      { settings: { publishing: { topics: [T, { name: 'audit' }] } } },
      ['Topic:orders Pub', 'Topic:audit Pub'],
    ],
    [
      'Telemetry',
      { settings: { subscription: { group: G, subscriptions: [{ topic: T }] } } },
      ['Group:billing Sub', 'Topic:orders Sub'],
    ],
    ['Telemetry', { thread_stack_trace: {} }, []],
  ];
  for (const [method, req, want] of cases) assert.deepEqual(rights(method, req), want, method);
});

test('names are the broker’s: namespace%name from the header or the resource', () => {
  assert.deepEqual(rights('QueryRoute', { topic: T }, 'prod'), ['Topic:prod%orders Pub|Sub']);
  assert.deepEqual(
    rights('SendMessage', { messages: [{ topic: { name: 'orders', resource_namespace: 'eu' } }] }),
    ['Topic:eu%orders Pub'],
  );
});

test('a request that names no topic or group is refused (FORBIDDEN) before it runs', () => {
  for (const [method, req] of [
    ['SendMessage', { messages: [] }],
    ['QueryRoute', {}],
    ['ReceiveMessage', { group: G }],
    ['ChangeInvisibleDuration', { topic: T }],
    ['Heartbeat', { client_type: 3 }],
  ] as const) {
    assert.throws(
      () => accessRequests(method, req, ''),
      (e: unknown) => isVelaError(e, 'ACL_FORBIDDEN'),
      method,
    );
  }
});
