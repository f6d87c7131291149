/**
 * The matrix's ACL mode: the broker with access control on, the program connecting over TLS (the
 * port's self-signed certificate) and signing with a normal user whose ACL covers exactly the run's
 * topics and groups, in a time zone 5 h 30 min east of UTC (the Java, Go and Python clients stamp
 * `x-mq-date-time` with local time). TLS and ACL share one run per language to keep `npm test`
 * short; the plaintext runs cover everything without credentials. The scenarios are those that
 * use every RPC the clients make under ACL (send, route, Telemetry, heartbeat, assignment, receive,
 * ack, change of invisible time, the DLQ, recall, end of a transaction and the orphan check over
 * Telemetry), plus `acl-refused`: a wrong secret key is refused with
 * UNAUTHORIZED and a topic outside the user's rights with FORBIDDEN.
 */
import assert from 'node:assert/strict';
import type { Presented } from '../../../src/broker/auth/access-control.js';
import { parseDateTime } from '../../../src/broker/auth/date-time.js';
import { isVelaError } from '../../../src/common/errors.js';
import type { TestBroker } from '../../support/harness.js';
import type { Language } from './build.js';
import type { MatrixMode } from './scenarios.js';

const ROOT = { accessKey: 'interop-root', secretKey: 'interop-root-secret' };
const USER = { accessKey: 'interop-user', secretKey: 'interop-user-Secret' };
const UNAUTHORIZED = 40100;
const FORBIDDEN = 40300;
/** India: +05:30, no daylight saving (the offset is the same all year). */
const TIME_ZONE = 'Asia/Kolkata';
const TIME_ZONE_OFFSET_MS = 5.5 * 3600_000;

/**
 * The Python client reports a refused route query as `Exception: failed to fetch topic:… route.`:
 * the status code reaches only its log (docs/compatibility.md, P6).
 */
const ROUTE_REFUSAL_CODE_REPORTED: Record<Language, boolean> = { java: true, go: true, python: false };

/** What the broker saw of the program's user: date-time offsets and the refusals it answered. */
interface Seen {
  offsets: number[];
  refusals: { code: number; message: string }[];
}
const seenBy = new WeakMap<TestBroker, Seen>();

/** gRPC calls by transport, counted by the broker's embedder hook (this file's process has one broker). */
const transport = { tls: 0, plaintext: 0 };

function watch(b: TestBroker): void {
  const acl = b.running.broker.acl;
  const seen: Seen = { offsets: [], refusals: [] };
  seenBy.set(b, seen);
  const refused = (err: unknown) => {
    if (isVelaError(err)) seen.refusals.push({ code: err.code, message: err.message });
    return err;
  };
  const authenticate = acl.authenticate.bind(acl);
  acl.authenticate = (p: Presented, clock) => {
    if (!p.authorization.includes(`Credential=${USER.accessKey}`)) return authenticate(p, clock);
    const stamped = parseDateTime(p.dateTime);
    if (stamped !== undefined) seen.offsets.push(stamped - Date.now());
    try {
      return authenticate(p, clock);
    } catch (err) {
      throw refused(err);
    }
  };
  const authorize = acl.authorize.bind(acl);
  acl.authorize = (principal, requests, sourceIp) => {
    try {
      authorize(principal, requests, sourceIp);
    } catch (err) {
      throw refused(err);
    }
  };
}

export const ACL_MODE: MatrixMode = {
  name: 'tls-acl',
  broker: {
    aclEnabled: true,
    aclInitUser: `${ROOT.accessKey}:${ROOT.secretKey}`,
    tlsMode: 'permissive',
    authenticate: ({ peer }) => void (peer.secure ? transport.tls++ : transport.plaintext++),
  },
  admin: ROOT,
  // Java and Go accept the self-signed certificate as it is; Python trusts gRPC's root store, which
  // this points at the broker's certificate (docs/transport.md#tls).
  env: (b) => ({ TZ: TIME_ZONE, GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: b.running.tls!.certFile }),
  connection: (endpoint) => ({ endpoint, tls: true, ...USER }),
  scenarios: [
    'producer-normal',
    'producer-delay',
    'producer-transaction',
    'simple-ack',
    'simple-change-invisible',
    'simple-dlq',
    'push-retry',
    'push-fifo',
    'acl-refused',
  ],
  async prepare({ admin, broker, runs }) {
    watch(broker);
    await admin.createUser(USER.accessKey, USER.secretKey);
    const topics: string[] = [];
    const groups: string[] = [];
    for (const r of runs.values()) {
      if (r.scenario === 'acl-refused') continue; // its topic is outside the user's rights
      topics.push(`Topic:${r.topic}`, `Topic:%DLQ%${r.group}`);
      groups.push(`Group:${r.group}`);
    }
    await admin.createAcl({
      subject: `User:${USER.accessKey}`,
      resources: [...topics, ...groups],
      actions: ['Pub', 'Sub'],
      sourceIps: ['127.0.0.0/8', '::1'],
      decision: 'Allow',
    });
  },
  checks({ language, broker, result, run, test }) {
    test('TLS: every call of the program came over TLS', () => {
      assert.ok(transport.tls > 0, 'calls arrived over TLS');
      assert.equal(transport.plaintext, 0, 'no call arrived in plaintext');
    });

    test('access control: a wrong secret key is UNAUTHORIZED, a topic outside the ACL FORBIDDEN', () => {
      const { topic } = run('acl-refused');
      const seen = seenBy.get(broker())!;
      // What the broker answered.
      assert.ok(
        seen.refusals.some((r) => r.code === UNAUTHORIZED && /signature does not match/.test(r.message)),
        `UNAUTHORIZED answered to the wrong secret: ${JSON.stringify(seen.refusals)}`,
      );
      assert.ok(
        seen.refusals.some((r) => r.code === FORBIDDEN && r.message.includes(`Topic:${topic}`)),
        `FORBIDDEN answered for ${topic}: ${JSON.stringify(seen.refusals)}`,
      );
      assert.ok(
        seen.refusals.every((r) =>
          r.code === FORBIDDEN
            ? r.message.includes(`Topic:${topic}`)
            : /signature does not match/.test(r.message),
        ),
        `nothing else was refused (every RPC of the other scenarios was let in): ${JSON.stringify(seen.refusals)}`,
      );
      assert.equal(broker().running.broker.queueState(topic, 0).maxOffset, 0, 'nothing stored');
      // What the application saw.
      const r = result('acl-refused');
      const wrong = r.wrongSignature as { ok: boolean; code?: number | null; error?: string };
      const forbidden = r.forbiddenTopic as { ok: boolean; code?: number | null; error?: string };
      assert.equal(wrong.ok, false, 'the wrong signature was refused');
      assert.equal(forbidden.ok, false, 'the forbidden topic was refused');
      if (ROUTE_REFUSAL_CODE_REPORTED[language]) {
        assert.equal(wrong.code, UNAUTHORIZED, wrong.error);
        assert.equal(forbidden.code, FORBIDDEN, forbidden.error);
      } else {
        assert.match(String(wrong.error), /failed to fetch topic/);
        assert.match(String(forbidden.error), /failed to fetch topic/);
      }
    });

    test(`access control: the client stamps local time (${TIME_ZONE}), accepted as a time-zone offset`, () => {
      const { offsets } = seenBy.get(broker())!;
      assert.ok(offsets.length > 0, 'signed requests were seen');
      for (const off of offsets) {
        assert.ok(
          Math.abs(off - TIME_ZONE_OFFSET_MS) < 120_000,
          `x-mq-date-time ${Math.round(off / 60_000)} min from UTC (local time in ${TIME_ZONE} expected)`,
        );
      }
    });
  },
};
