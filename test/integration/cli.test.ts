/**
 * The `vela` command as users run it: `vela admin …` as a child process against an in-process broker,
 * and `vela broker` as a child process (ready line, SIGTERM, locked data dir, port in use, bad config).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { startBroker, type RunningBroker } from '../../src/server.js';
import { resolveBrokerConfig } from '../../src/cli/broker-config.js';
import {
  parseAttributes,
  parseBoolean,
  parseInteger,
  parseRetryPolicyJson,
} from '../../src/admin/cli/arguments.js';
import { formatPerm, formatTable, formatTime } from '../../src/admin/cli/table.js';
import { tempDir } from '../helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI_TIMEOUT_MS = 30_000;
/** CLI children run at most this many at a time: more only thrash a loaded machine. */
const MAX_CHILDREN = 3;
const children = new Set<ChildProcess>();

/** The environment without any VELA_* setting of the machine running the tests. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('VELA_')) env[k] = v;
  return { ...env, ...extra };
}

function spawnCli(args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

let active = 0;
const waiting: (() => void)[] = [];

async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (active >= MAX_CHILDREN) await new Promise<void>((r) => waiting.push(r));
  else active++;
  try {
    return await fn();
  } finally {
    // Hand the slot straight to the next waiter, so no newcomer can slip in between.
    const next = waiting.shift();
    if (next) next();
    else active--;
  }
}

/** Run `vela …` to completion (killed after CLI_TIMEOUT_MS). */
function runCli(args: string[], env: Record<string, string> = {}): Promise<Result> {
  return withSlot(() => {
    const child = spawnCli(args, env);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS);
    return new Promise<Result>((resolve) =>
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      }),
    );
  });
}

function assertOneLineError(r: Result, code: number, pattern: RegExp, what: string): void {
  assert.equal(r.code, code, `${what}: exit code (stderr: ${r.stderr})`);
  assert.equal(r.stderr.trim().split('\n').length, 1, `${what}: one line on stderr, got ${r.stderr}`);
  assert.match(r.stderr, pattern, what);
  assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`);
}

let seq = 0;
const unique = (prefix: string) => `${prefix}_${process.pid}_${Date.now() % 100_000}_${seq++}`;

/** A port that nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

after(() => {
  for (const c of children) c.kill('SIGKILL');
});

describe('vela admin', { concurrency: true, timeout: 90_000 }, () => {
  const dir = tempDir('vela-cli-');
  let running: RunningBroker;
  let addr: string;
  const admin = (...args: string[]) => runCli(['admin', ...args, '-n', addr]);

  before(async () => {
    running = await startBroker({ dataDir: dir.path, grpcPort: 0, httpPort: 0, remotingPort: 0 });
    addr = `127.0.0.1:${running.httpPort}`;
  });
  after(async () => {
    await running?.close();
    dir.cleanup();
  });

  test('updateTopic -a +message.type=FIFO creates a FIFO topic that topicList shows', async () => {
    const topic = unique('CliFifo');
    const created = await admin(
      'updateTopic',
      '-t',
      topic,
      '-a',
      '+message.type=FIFO',
      '-c',
      'DefaultCluster',
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /create topic to .* success\./);
    assert.match(created.stdout, new RegExp(`topicName=${topic}, .*messageType=FIFO`));
    assert.equal(running.broker.topics.get(topic)?.messageType, 'FIFO');

    const [table, json] = await Promise.all([admin('topicList'), admin('topicList', '--json')]);
    assert.equal(table.code, 0, table.stderr);
    const header = table.stdout.split('\n')[0]!;
    assert.match(header, /^#Topic\s+#Message Type\s+#Read Queues\s+#Write Queues\s+#Perm$/);
    const row = table.stdout.split('\n').find((l) => l.startsWith(`${topic} `));
    assert.ok(row, `topicList lists ${topic}:\n${table.stdout}`);
    assert.deepEqual(row.split(/\s+/), [topic, 'FIFO', '8', '8', 'RW-']);
    // Columns are aligned: the message type starts where its header does.
    assert.equal(row.indexOf('FIFO'), header.indexOf('#Message Type'));

    assert.equal(json.code, 0, json.stderr);
    const topics = JSON.parse(json.stdout) as { topic: string; messageType: string }[];
    assert.equal(topics.find((t) => t.topic === topic)?.messageType, 'FIFO');
  });

  /** Setup through the HTTP API: cheaper than a CLI child process. */
  async function api(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`http://${addr}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    assert.ok(res.ok, `${method} ${path}: HTTP ${res.status}`);
    return res.json();
  }

  test('topicStatus and topicRoute', async () => {
    const topic = unique('CliStatus');
    await api('POST', '/api/topics', { topic, readQueueNums: 4, writeQueueNums: 4 });

    const [status, route, routeTable] = await Promise.all([
      admin('topicStatus', '-t', topic),
      admin('topicRoute', '-t', topic),
      admin('topicRoute', '-t', topic, '-l'),
    ]);
    assert.equal(status.code, 0, status.stderr);
    const lines = status.stdout.trim().split('\n');
    assert.match(lines[0]!, /^#Broker Name\s+#QID\s+#Min Offset\s+#Max Offset\s+#Last Updated$/);
    assert.equal(lines.length, 5, status.stdout);
    assert.deepEqual(lines[1]!.split(/\s+/), ['broker-0', '0', '0', '0', 'N/A']);

    assert.equal(route.code, 0, route.stderr);
    const r = JSON.parse(route.stdout) as {
      brokerDatas: { brokerAddrs: Record<string, string> }[];
      queueDatas: { readQueueNums: number; writeQueueNums: number; perm: number }[];
      messageType: string;
    };
    assert.equal(r.brokerDatas[0]!.brokerAddrs['0'], `127.0.0.1:${running.grpcPort}`);
    assert.deepEqual(r.queueDatas[0], {
      brokerName: 'broker-0',
      readQueueNums: 4,
      writeQueueNums: 4,
      perm: 6,
    });
    assert.equal(r.messageType, 'NORMAL');
    assert.equal(routeTable.code, 0, routeTable.stderr);
    assert.match(
      routeTable.stdout,
      new RegExp(`broker-0\\s+127\\.0\\.0\\.1:${running.grpcPort}\\s+4\\s+4\\s+RW-`),
    );
  });

  test('updateSubGroup with -r and -p; the policy shows in groupList --json and the HTTP API', async () => {
    const group = unique('CliGroup');
    const policy = { type: 'CUSTOMIZED', customizedRetryPolicy: { next: [1000, 5000, 30000] } };
    const created = await admin('updateSubGroup', '-g', group, '-r', '3', '-p', JSON.stringify(policy));
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /create subscription group to .* success\./);
    assert.match(created.stdout, /retryMaxTimes=3/);

    const listed = await admin('groupList', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    const g = (
      JSON.parse(listed.stdout) as { group: string; retryMaxTimes: number; groupRetryPolicy: unknown }[]
    ).find((x) => x.group === group);
    assert.equal(g?.retryMaxTimes, 3);
    assert.deepEqual(g?.groupRetryPolicy, policy);

    assert.deepEqual(
      ((await api('GET', `/api/groups/${group}`)) as { groupRetryPolicy: unknown }).groupRetryPolicy,
      policy,
    );

    const exp = { type: 'EXPONENTIAL', exponentialRetryPolicy: { initial: 1000, max: 60000, multiplier: 2 } };
    const updated = await admin(
      'updateSubGroup',
      '-g',
      group,
      '-p',
      JSON.stringify(exp),
      '-o',
      'true',
      '--json',
    );
    assert.equal(updated.code, 0, updated.stderr);
    const u = JSON.parse(updated.stdout) as {
      groupRetryPolicy: unknown;
      retryMaxTimes: number;
      consumeMessageOrderly: boolean;
    };
    assert.deepEqual(u.groupRetryPolicy, exp);
    assert.equal(u.retryMaxTimes, 3, 'settings not given are kept');
    assert.equal(u.consumeMessageOrderly, true);
  });

  test('consumerProgress on a group that has consumed nothing', async () => {
    const group = unique('CliIdle');
    await api('POST', '/api/groups', { group });
    const [table, json] = await Promise.all([
      admin('consumerProgress', '-g', group),
      admin('consumerProgress', '-g', group, '--json'),
    ]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(
      table.stdout.split('\n')[0]!,
      /^#Topic\s+#Broker Name\s+#QID\s+#Broker Offset\s+#Consumer Offset\s+#In-flight\s+#Diff\s+#Last Time$/,
    );
    assert.match(table.stdout, /Consume Diff Total: 0\s+In-flight Total: 0/);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), {
      group,
      queues: [],
      totalLag: 0,
      inflight: 0,
      waitingRetry: 0,
      deadLettered: 0,
      warnings: [],
    });
  });

  test('queryMsgById and queryMsgByKey find a sent message', async () => {
    const topic = unique('CliMsg');
    await api('POST', '/api/topics', { topic, readQueueNums: 1, writeQueueNums: 1 });
    const messageId = `01CLI${Date.now().toString(16).toUpperCase()}${seq++}`;
    const [receipt] = await running.broker.produce.send([
      { topic, messageId, body: Buffer.from('hello vela'), tag: 'created', keys: ['order-42'] },
    ]);
    assert.ok(receipt && !(receipt instanceof Error), String(receipt));

    const [byId, byKey, missing] = await Promise.all([
      admin('queryMsgById', '-i', messageId, '-t', topic),
      admin('queryMsgByKey', '-k', 'order-42', '-t', topic),
      admin('queryMsgById', '-i', `${messageId}FF`, '-t', topic),
    ]);
    assert.equal(byId.code, 0, byId.stderr);
    assert.match(byId.stdout, new RegExp(`^Message ID:\\s+${messageId}$`, 'm'));
    assert.match(byId.stdout, /^Tags:\s+\[created\]$/m);
    assert.match(byId.stdout, /^Keys:\s+\[order-42\]$/m);
    assert.match(byId.stdout, /^Message Body:\s+hello vela$/m);
    assert.equal(byKey.code, 0, byKey.stderr);
    assert.match(byKey.stdout, new RegExp(`^${messageId}\\s+0\\s+0\\s+created\\s+order-42\\s+\\d{4}-`, 'm'));
    assertOneLineError(missing, 1, /no message with ID/, 'unknown message id');
  });

  test('queryDlqMsg lists a dead letter and resendDlqMsg sends it back to its group', async () => {
    const topic = unique('CliDlq');
    const group = unique('GCliDlq');
    await api('POST', '/api/topics', { topic });
    await api('POST', '/api/groups', { group, retryMaxTimes: 0 });
    const [receipt] = await running.broker.produce.send([
      { topic, messageId: 'DLQ-CLI-1', body: Buffer.from('x') },
    ]);
    assert.ok(receipt && !(receipt instanceof Error));
    const filter = { expression: '*', tags: null, hashes: null, matches: () => true };
    const [d] = await running.broker.consume.receive({
      group,
      topic,
      filter,
      autoRenew: true,
      clientId: 'cli-test',
      pollMs: 0,
    });
    assert.ok(d);
    await running.broker.consume.changeInvisibleDuration(group, topic, d.receiptHandle, 0); // the only attempt fails
    let listed = await admin('queryDlqMsg', '-g', group, '--json');
    for (let i = 0; i < 50 && !listed.stdout.includes('DLQ-CLI-1'); i++) {
      await new Promise((r) => setTimeout(r, 20));
      listed = await admin('queryDlqMsg', '-g', group, '--json');
    }
    assert.equal(listed.code, 0, listed.stderr);
    const page = JSON.parse(listed.stdout);
    assert.deepEqual(
      page.messages.map((m: { messageId: string; originTopic: string }) => [m.messageId, m.originTopic]),
      [['DLQ-CLI-1', topic]],
    );
    const table = await admin('queryDlqMsg', '-g', group);
    assert.match(table.stdout, /DLQ-CLI-1/);
    const resent = await admin('resendDlqMsg', '-g', group, '-i', 'DLQ-CLI-1');
    assert.equal(resent.code, 0, resent.stderr);
    assert.match(resent.stdout, /resent 1 message/);
    const [back] = await running.broker.consume.receive({
      group,
      topic,
      filter,
      autoRenew: false,
      invisibleMs: 30_000,
      clientId: 'cli-test',
      pollMs: 2000,
    });
    assert.equal(back?.message.properties.ORIGIN_MESSAGE_ID, 'DLQ-CLI-1');
    assertOneLineError(
      await admin('resendDlqMsg', '-g', group, '-i', 'nope'),
      1,
      /no dead letter/,
      'unknown dead letter',
    );
  });

  test('deleteTopic removes the topic', async () => {
    const topic = unique('CliDelete');
    await api('POST', '/api/topics', { topic });
    const deleted = await admin('deleteTopic', '-t', topic);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, new RegExp(`delete topic \\[${topic}\\] .* success\\.`));
    const listed = await admin('topicList', '--json');
    assert.ok(!(JSON.parse(listed.stdout) as { topic: string }[]).some((t) => t.topic === topic));
    assert.equal(running.broker.topics.get(topic), undefined);
  });

  test('bad input: one line on stderr and a non-zero exit', async () => {
    const topic = unique('CliBad');
    const group = unique('CliBadGroup');
    const closed = await freePort();
    // The argument parsers' other refusals are checked in-process below (a child process is costly).
    const cases: [string[], number, RegExp][] = [
      [['fooBar'], 2, /unknown command 'fooBar'/],
      [['topicStatus'], 2, /required option '-t, --topic <topic>' not specified/],
      [['updateTopic', '-t', topic, '-r', 'abc'], 2, /-r, --readQueueNums.*'abc' is invalid.*integer/],
      [['updateSubGroup', '-g', group, '-p', '{"type":'], 2, /-p, --groupRetryPolicy.*Not valid JSON/],
      [
        ['updateSubGroup', '-g', group, '-p', '{"type":"NOPE"}'],
        1,
        /retry policy.*ILLEGAL_GROUP_CONFIG, code \d+/,
      ],
      [
        ['topicStatus', '-t', 'NoSuchTopic_cli'],
        1,
        /topic not found: NoSuchTopic_cli \(TOPIC_NOT_FOUND, code \d+\)/,
      ],
      [['updateTopic', '-t', '%DLQ%CliNope'], 1, /system namespace.*\(ILLEGAL_TOPIC, code \d+\)/],
      [['updateSubGroup', '-g', '%SYS%CliNope'], 1, /system namespace.*\(ILLEGAL_CONSUMER_GROUP, code \d+\)/],
    ];
    const [unreachable, ...results] = await Promise.all([
      runCli(['admin', 'topicList', '-n', `127.0.0.1:${closed}`]),
      ...cases.map(([args]) => admin(...args)),
    ]);
    cases.forEach(([args, code, pattern], i) => {
      assertOneLineError(results[i]!, code, pattern, args.join(' '));
      assert.equal(results[i]!.stdout, '', `${args.join(' ')}: nothing on stdout`);
    });
    // Exit 3: the broker cannot be reached, so trying again later may succeed (docs/errors.md).
    assertOneLineError(
      unreachable,
      3,
      /cannot reach the Vela admin API at http:\/\/127\.0\.0\.1:\d+.*ECONNREFUSED/,
      'unreachable',
    );
    assert.equal(running.broker.topics.get(topic), undefined, 'nothing was created by the refused commands');
  });

  test('admin --help lists the commands', async () => {
    const r = await runCli(['admin', '--help']);
    assert.equal(r.code, 0, r.stderr);
    for (const cmd of [
      'updateTopic',
      'deleteTopic',
      'topicList',
      'topicStatus',
      'topicRoute',
      'updateSubGroup',
      'deleteSubGroup',
      'consumerProgress',
      'consumerConnection',
      'queryMsgById',
      'queryMsgByKey',
    ]) {
      assert.match(r.stdout, new RegExp(`^\\s+${cmd} `, 'm'), cmd);
    }
  });
});

/** The fields of `vela broker`'s ready line these tests read. */
interface ReadyLine {
  msg: string;
  http: string;
  heapGrowingPercent: number | null;
}

describe('vela broker', { concurrency: true, timeout: 90_000 }, () => {
  /** Spawn `vela broker`, resolving with its pino log lines once the ready line appears. */
  function startCli(args: string[]): {
    child: ChildProcess;
    ready: Promise<ReadyLine>;
    lines: string[];
  } {
    const child = spawnCli(['broker', ...args]);
    const lines: string[] = [];
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const ready = new Promise<ReadyLine>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no ready line within 30 s')), 30_000);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        lines.push(line);
        let rec: Partial<ReadyLine>;
        try {
          rec = JSON.parse(line) as Partial<ReadyLine>;
        } catch {
          return reject(new Error(`a log line that is not JSON: ${line}`));
        }
        if (rec.msg?.startsWith('Vela broker ready')) {
          clearTimeout(timer);
          resolve(rec as ReadyLine);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`broker exited (${code}) before ready: ${stderr}`));
      });
    });
    return { child, ready, lines };
  }

  const exitOf = (child: ChildProcess) =>
    new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode);
      else child.once('exit', (code) => resolve(code));
    });

  test('starts, logs one ready line, refuses a second broker on its data dir, exits 0 on SIGTERM', async () => {
    const dir = tempDir('vela-cli-broker-');
    try {
      const first = startCli([
        '--data-dir',
        dir.path,
        '--grpc-port',
        '0',
        '--http-port',
        '0',
        '--remoting-port',
        '0',
      ]);
      const ready = await first.ready;
      assert.match(
        ready.msg,
        /^Vela broker ready: gRPC 127\.0\.0\.1:\d+ · Remoting 127\.0\.0\.1:\d+ · admin HTTP http:\/\/127\.0\.0\.1:\d+ · data .+ \(flush sync\)$/,
      );
      // The process's heap growing factor is set (src/cli/broker-heap.ts) and said.
      assert.equal(ready.heapGrowingPercent, 300);
      const health = await fetch(`${ready.http}/healthz`);
      assert.equal(health.status, 200);

      const second = await runCli([
        'broker',
        '--data-dir',
        dir.path,
        '--grpc-port',
        '0',
        '--http-port',
        '0',
        '--remoting-port',
        '0',
      ]);
      assertOneLineError(second, 1, /locked|in use/, 'second broker on the same data dir');

      const exited = exitOf(first.child);
      first.child.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.equal(first.lines.filter((l) => l.includes('Vela broker ready')).length, 1);
      assert.ok(first.lines.some((l) => l.includes('Vela broker stopped')));
    } finally {
      dir.cleanup();
    }
  });

  test('a broker whose HTTP port is taken exits 1 with a clear message', async () => {
    const dir = tempDir('vela-cli-port-');
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = await runCli([
        'broker',
        '--data-dir',
        dir.path,
        '--grpc-port',
        '0',
        '--http-port',
        String(port),
        '--remoting-port',
        '0',
      ]);
      assertOneLineError(
        r,
        1,
        new RegExp(`HTTP port 127\\.0\\.0\\.1:${port} is already in use`),
        'taken port',
      );
    } finally {
      await new Promise((r) => blocker.close(r));
      dir.cleanup();
    }
  });

  test('bad settings are usage errors (exit 2) before anything starts', async () => {
    const dir = tempDir('vela-cli-bad-');
    try {
      // The other refusals (config file, lists, booleans) are checked in-process below.
      const [flush, env] = await Promise.all([
        runCli(['broker', '--data-dir', dir.path, '--flush', 'sometimes']),
        runCli(['broker', '--data-dir', dir.path], { VELA_HTTP_PORT: 'eighty' }),
      ]);
      assertOneLineError(flush, 2, /unknown flush policy "sometimes"/, '--flush');
      assertOneLineError(env, 2, /VELA_HTTP_PORT: "eighty" is not a port number/, 'VELA_HTTP_PORT');
    } finally {
      dir.cleanup();
    }
  });
});

test('broker settings: flags > environment > config file > defaults, resolved into a frozen config', () => {
  const file = JSON.stringify({
    dataDir: '/from/file',
    httpPort: 9002,
    grpcPort: [9001, 9000],
    flush: 'async',
  });
  const readFile = () => file;

  const defaults = resolveBrokerConfig({}, { env: {} });
  assert.equal(defaults.dataDir, './vela-data');
  assert.deepEqual(defaults.grpcPorts, [8081]);
  assert.equal(defaults.httpPort, 8082);
  assert.equal(defaults.host, '127.0.0.1');
  assert.equal(defaults.flush, 'sync');
  assert.equal(defaults.autoCreateTopics, false);
  assert.ok(Object.isFrozen(defaults) && Object.isFrozen(defaults.grpcPorts));

  const fromFile = resolveBrokerConfig({ config: 'vela.json' }, { env: {}, readFile });
  assert.equal(fromFile.dataDir, '/from/file');
  assert.deepEqual(fromFile.grpcPorts, [9001, 9000]);
  assert.equal(fromFile.flush, 'async');

  const env = {
    VELA_CONFIG: 'vela.json',
    VELA_GRPC_PORT: '7001,7000',
    VELA_FLUSH: 'sync',
    VELA_AUTO_CREATE: 'true',
  };
  const fromEnv = resolveBrokerConfig({}, { env, readFile });
  assert.deepEqual(fromEnv.grpcPorts, [7001, 7000]);
  assert.equal(fromEnv.flush, 'sync');
  assert.equal(fromEnv.httpPort, 9002, 'the file still supplies what env does not');
  assert.equal(fromEnv.autoCreateTopics, true);
  assert.equal(fromEnv.autoCreateGroups, true);

  const fromFlags = resolveBrokerConfig(
    { grpcPort: ['6001,6000', '8080'], flush: 'async', httpPort: '6002' },
    { env, readFile },
  );
  assert.deepEqual(fromFlags.grpcPorts, [6001, 6000, 8080]);
  assert.equal(fromFlags.flush, 'async');
  assert.equal(fromFlags.httpPort, 6002);
  assert.equal(fromFlags.dataDir, '/from/file');

  assert.throws(() => resolveBrokerConfig({ grpcPort: ['8081'], httpPort: '8081' }, { env: {} }), /both/);
  assert.throws(() => resolveBrokerConfig({ grpcPort: ['8081,80x'] }, { env: {} }), /"80x" is not a port/);
  assert.throws(() => resolveBrokerConfig({ logLevel: 'loud' }, { env: {} }), /unknown log level/);
  assert.throws(() => resolveBrokerConfig({}, { env: { VELA_AUTO_CREATE: 'maybe' } }), /not a boolean/);
  assert.throws(
    () =>
      resolveBrokerConfig(
        { config: 'missing.json' },
        {
          env: {},
          readFile: () => {
            throw new Error('ENOENT');
          },
        },
      ),
    /cannot read config file missing\.json/,
  );
  assert.throws(
    () => resolveBrokerConfig({ config: 'x.json' }, { env: {}, readFile: () => '{' }),
    /not valid JSON/,
  );
  assert.throws(
    () =>
      resolveBrokerConfig(
        { config: 'x.json' },
        { env: {}, readFile: () => '{"store":{"retentionMs":"1h"}}' },
      ),
    /store\.retentionMs" must be a number/,
  );
  assert.throws(
    () => resolveBrokerConfig({ config: 'x.json' }, { env: {}, readFile: () => '{"retention": 1}' }),
    /unknown key "retention"/,
  );
});

test('admin argument parsers: mqadmin syntax in, one-line refusals out', () => {
  assert.deepEqual(parseAttributes('+message.type=FIFO'), { 'message.type': 'FIFO' });
  assert.deepEqual(parseAttributes('+message.type=DELAY, +x=y'), { 'message.type': 'DELAY', x: 'y' });
  assert.throws(() => parseAttributes('message.type=FIFO'), /\+key=value/);
  assert.throws(() => parseAttributes('-message.type'), /not supported/);
  assert.throws(() => parseAttributes(','), /at least one/);
  assert.equal(parseBoolean('TRUE'), true);
  assert.equal(parseBoolean('false'), false);
  assert.throws(() => parseBoolean('maybe'), /true or false/);
  assert.equal(parseInteger('16'), 16);
  assert.throws(() => parseInteger('1.5'), /integer/);
  assert.throws(() => parseInteger('x3'), /integer/);
  assert.deepEqual(parseRetryPolicyJson('{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000]}}'), {
    type: 'CUSTOMIZED',
    customizedRetryPolicy: { next: [1000] },
  });
  assert.throws(() => parseRetryPolicyJson('[1,2]'), /JSON object/);
  assert.throws(() => parseRetryPolicyJson('{"type":'), /Not valid JSON/);
});

test('table output: aligned columns under #headers, no trailing blanks', () => {
  assert.equal(
    formatTable(
      ['Topic', 'QID', 'Last'],
      [
        ['LongTopicName', 0, 'N/A'],
        ['T', 12, ''],
      ],
    ),
    '#Topic         #QID  #Last\nLongTopicName  0     N/A\nT              12\n',
  );
  assert.equal(formatPerm(6), 'RW-');
  assert.equal(formatTime(0), 'N/A');
  assert.match(formatTime(Date.now()), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}$/);
});
