"""Vela interop program for the official RocketMQ 5.x Python client (rocketmq-python-client).

    interop_client.py --endpoint HOST:PORT [--tls] [--access-key AK --secret-key SK]
        [--namespace NS] [--timeout-ms MS] SCENARIO TOPIC GROUP [SCENARIO TOPIC GROUP ...]

Runs the scenarios concurrently and prints one JSON line per scenario on stdout:
{"scenario":...,"ok":true,...result} or {"scenario":...,"ok":false,"error":...}. The client logs to
~/logs/rocketmq_python (the test driver points HOME at a log directory). Exit 0 once every scenario
reported; 2 on a usage error.

The scenarios use the same names, message bodies and result fields as the Java and Go programs; the
node:test driver (test/interop/official/scenarios.ts) asserts on them.
"""

import asyncio
import json
import os
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout

from rocketmq.v5.client.connection.rpc_client import RpcClient
from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,
                      MessageListener, Producer, PushConsumer, SimpleConsumer, TransactionChecker,
                      TransactionResolution)

# The simple consumers' long-polling time, in seconds (the client's unit).
AWAIT_S = 2
# The shortest invisible time the test broker accepts.
SHORT_INVISIBLE_S = 1
LONG_INVISIBLE_S = 30
# A shorter long poll, for scenarios that show that nothing arrives within a time (whole seconds:
# the client puts it in the Duration's seconds).
SHORT_AWAIT_S = 1
# How far ahead delay messages are due (whole seconds: the client sends `delivery_timestamp` as
# the seconds of the wire's Timestamp), and how long after their time they are waited for.
DELAY_S = 3
DELAY_WAIT_S = 8
# How long receiving goes on to show that nothing else comes.
DRAIN_S = 1.5
# How long half messages are shown to be invisible; how long committed and checked transactions
# are waited for.
HALF_WAIT_S = 0.5
TX_WAIT_S = 10
MESSAGE_NOT_FOUND = 40401


class Options:
    def __init__(self, argv):
        self.endpoint = None
        self.tls = False
        self.access_key = None
        self.secret_key = None
        self.namespace = ""
        self.timeout_s = 60.0
        self.runs = []
        positional = []
        it = iter(argv)
        for a in it:
            if a == "--endpoint":
                self.endpoint = self.value(it, a)
            elif a == "--tls":
                self.tls = True
            elif a == "--access-key":
                self.access_key = self.value(it, a)
            elif a == "--secret-key":
                self.secret_key = self.value(it, a)
            elif a == "--namespace":
                self.namespace = self.value(it, a)
            elif a == "--timeout-ms":
                self.timeout_s = int(self.value(it, a)) / 1000
            elif a.startswith("--"):
                raise ValueError(f"unknown option {a}")
            else:
                positional.append(a)
        if not self.endpoint:
            raise ValueError("--endpoint is required")
        if (self.access_key is None) != (self.secret_key is None):
            raise ValueError("--access-key and --secret-key go together")
        if not positional or len(positional) % 3:
            raise ValueError("expected SCENARIO TOPIC GROUP triples")
        self.runs = [tuple(positional[i:i + 3]) for i in range(0, len(positional), 3)]

    @staticmethod
    def value(it, name):
        try:
            return next(it)
        except StopIteration:
            raise ValueError(f"{name} needs a value")


# ---- clients ---------------------------------------------------------------------------------------

def config(o):
    # Empty credentials mean "do not sign".
    credentials = Credentials(o.access_key, o.secret_key) if o.access_key is not None else Credentials()
    return ClientConfiguration(o.endpoint, credentials, o.namespace, request_timeout=5)


def producer(o, topic):
    # The Python client's default is plaintext; TLS is a constructor argument.
    p = Producer(config(o), (topic,), tls_enable=o.tls)
    p.startup()
    return p


def simple_consumer(o, group, topic, filter_expression="*", await_s=AWAIT_S):
    c = SimpleConsumer(config(o), group, {topic: FilterExpression(filter_expression)},
                       await_duration=await_s, tls_enable=o.tls)
    c.startup()
    return c


class Listener(MessageListener):
    def __init__(self, fn):
        self.fn = fn

    def consume(self, message):
        return self.fn(message)


def push_consumer(o, group, topic, threads, fn):
    c = PushConsumer(config(o), group, Listener(fn), {topic: FilterExpression()},
                     consumption_thread_count=threads, tls_enable=o.tls)
    c.startup()
    return c


def message(topic, body):
    m = Message()
    m.topic = topic
    m.body = body.encode("utf-8")
    return m


def send(p, m):
    receipt = p.send(m)
    return {"messageId": receipt.message_id, "body": m.body.decode("utf-8")}


def view(m):
    """A delivered message as the result lines show it."""
    return {
        "messageId": m.message_id,
        "topic": m.topic,
        "body": m.body.decode("utf-8"),
        "tag": m.tag,
        "keys": sorted(m.keys),
        "messageGroup": m.message_group,
        "properties": dict(m.properties),
        "deliveryAttempt": m.delivery_attempt,
        "bornTimestamp": m.born_timestamp,
    }


def outcome(fn):
    try:
        fn()
        return {"ok": True}
    except Exception as e:  # noqa: BLE001 - the outcome is the point
        return {"ok": False, "code": getattr(e, "code", None), "error": f"{type(e).__name__}: {e}"}


def receive(c, max_num, invisible_s):
    """One receive call; "no new message" is an empty result."""
    try:
        return c.receive(max_num, invisible_s) or []
    except Exception as e:  # noqa: BLE001
        if getattr(e, "code", None) == MESSAGE_NOT_FOUND:
            return []
        raise


def receive_n(c, count, invisible_s, ack, timeout_s):
    out = []
    until = time.time() + timeout_s
    while len(out) < count and time.time() < until:
        for m in receive(c, count - len(out), invisible_s):
            if ack:
                c.ack(m)
            out.append(m)
    return out


def shutdown(*clients):
    for c in clients:
        try:
            c.shutdown()
        except Exception:  # noqa: BLE001
            traceback.print_exc()


# ---- producer --------------------------------------------------------------------------------------

def producer_normal(o, topic, group):
    p = producer(o, topic)
    try:
        return {"sent": [send(p, message(topic, f"normal-{i}")) for i in range(5)]}
    finally:
        shutdown(p)


def producer_fifo(o, topic, group):
    p = producer(o, topic)
    try:
        sent = []
        for seq in range(4):
            for g in ("Order-001", "Order-002", "Account-Alice"):
                m = message(topic, f"{g}#{seq}")
                m.message_group = g
                s = send(p, m)
                s["messageGroup"] = g
                sent.append(s)
        return {"sent": sent}
    finally:
        shutdown(p)


def producer_keys(o, topic, group):
    p = producer(o, topic)
    try:
        sent = []
        for i in range(3):
            keys = [f"{topic}-k{i}a", f"{topic}-k{i}b"]
            m = message(topic, f"keys-{i}")
            for k in keys:
                m.keys = k
            s = send(p, m)
            s["keys"] = keys
            sent.append(s)
        return {"sent": sent}
    finally:
        shutdown(p)


def producer_tags(o, topic, group):
    p = producer(o, topic)
    try:
        sent = []
        for i in range(4):
            tag = "TagA" if i % 2 == 0 else "TagB"
            m = message(topic, f"tags-{i}")
            m.tag = tag
            s = send(p, m)
            s["tag"] = tag
            sent.append(s)
        return {"sent": sent}
    finally:
        shutdown(p)


def producer_properties(o, topic, group):
    p = producer(o, topic)
    try:
        props = {"orderId": "42", "unicode": "héllo ✓", "with space": "a b"}
        m = message(topic, "properties-0")
        for k, v in props.items():
            m.add_property(k, v)
        s = send(p, m)
        s["properties"] = props
        return {"sent": [s]}
    finally:
        shutdown(p)


def now_ms():
    return round(time.time() * 1000)


def producer_delay(o, topic, group):
    """A DELAY message due DELAY_S from now, and a second one recalled before its time. The consumer
    polls from before the send until the first arrives, then a little longer (the recalled one, due
    at the same time, would come then); recalling the delivered one is refused."""
    c = simple_consumer(o, group, topic, await_s=SHORT_AWAIT_S)
    p = producer(o, topic)
    try:
        # As the client's example does: whole seconds (the setter's value becomes the Timestamp's
        # seconds; a value in milliseconds would be refused as too far ahead).
        due_s = int(time.time()) + DELAY_S
        receipts = {}
        for b in ("delay-kept", "delay-gone"):
            m = message(topic, b)
            m.delivery_timestamp = due_s
            r = p.send(m)
            receipts[b] = {"messageId": r.message_id, "body": b, "recallHandle": r.recall_handle}
        try:
            recall = {"messageId": p.recall_message(topic, receipts["delay-gone"]["recallHandle"]),
                      "atMs": now_ms()}
        except Exception as e:  # noqa: BLE001 - the outcome is the point
            recall = {"ok": False, "code": getattr(e, "code", None), "error": f"{type(e).__name__}: {e}"}
        first_poll = now_ms()
        received, empty_polls = [], 0

        def delayed(m, at):
            v = view(m)
            v["deliveryTimestamp"] = m.delivery_timestamp
            v["receivedAtMs"] = at
            return v

        until = due_s + DELAY_WAIT_S
        while not received and time.time() < until:
            got = receive(c, 2, LONG_INVISIBLE_S)
            at = now_ms()
            if not got:
                empty_polls += 1
            for m in got:
                c.ack(m)
                received.append(delayed(m, at))
        # Anything else (the recalled message) would be due now too.
        drain_until = time.time() + DRAIN_S
        while time.time() < drain_until:
            for m in receive(c, 2, LONG_INVISIBLE_S):
                c.ack(m)
                received.append(delayed(m, now_ms()))
        after = outcome(lambda: p.recall_message(topic, receipts["delay-kept"]["recallHandle"]))
        return {"deliveryTimestamp": due_s * 1000, "kept": receipts["delay-kept"],
                "gone": receipts["delay-gone"], "recall": recall, "firstPollMs": first_poll,
                "emptyPolls": empty_polls, "received": received, "recallAfterDelivery": after}
    finally:
        shutdown(p, c)


class LocalStateChecker(TransactionChecker):
    """Answers an orphan check from the "local transaction state", and records the checks."""

    def __init__(self, local):
        self.local = local
        self.lock = threading.Lock()
        self.checks = []
        self.orphans = Countdown(2)

    def check(self, message):
        b = message.body.decode("utf-8")
        with self.lock:
            self.checks.append({"messageId": message.message_id, "topic": message.topic, "body": b,
                                "atMs": now_ms()})
        if b.startswith("tx-orphan-"):
            self.orphans.hit()
        return self.local.get(b, TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED)


def producer_transaction(o, topic, group):
    """Two transactions left open (the broker's orphan check asks this producer's checker: commit
    one, roll back the other), one committed and one rolled back by the application. Nothing is
    visible before its end; the committed ones are delivered once."""
    checker = LocalStateChecker({
        "tx-commit": TransactionResolution.COMMIT,
        "tx-rollback": TransactionResolution.ROLLBACK,
        "tx-orphan-commit": TransactionResolution.COMMIT,
        "tx-orphan-rollback": TransactionResolution.ROLLBACK,
    })
    c = simple_consumer(o, group, topic, await_s=SHORT_AWAIT_S)
    p = Producer(config(o), (topic,), checker=checker, tls_enable=o.tls)
    try:
        p.startup()
        sent, open_ = [], {}
        for b in ("tx-orphan-commit", "tx-orphan-rollback", "tx-commit", "tx-rollback"):
            tx = p.begin_transaction()
            start = now_ms()
            r = p.send(message(topic, b), tx)
            sent.append({"messageId": r.message_id, "body": b, "transactionId": r.transaction_id,
                         "sendStartMs": start})
            open_[b] = tx
        # Half messages: nothing to receive yet.
        before = receive_n(c, 1, LONG_INVISIBLE_S, True, HALF_WAIT_S)
        open_["tx-commit"].commit()
        open_["tx-rollback"].rollback()
        got = receive_n(c, 2, LONG_INVISIBLE_S, True, TX_WAIT_S)
        checker.orphans.done.wait(TX_WAIT_S)
        # Whatever else would come (a rolled-back message, a duplicate) comes now.
        got += receive_n(c, 1, LONG_INVISIBLE_S, True, DRAIN_S)
        with checker.lock:
            checks = list(checker.checks)
        return {"sent": sent, "beforeEnd": [view(m) for m in before], "received": [view(m) for m in got],
                "checks": checks}
    finally:
        shutdown(p, c)


# ---- simple consumer -------------------------------------------------------------------------------

def simple_receive(o, topic, group):
    p = producer(o, topic)
    c = simple_consumer(o, group, topic, "TagA")
    try:
        sent = []
        for i in range(4):
            tag = "TagA" if i < 3 else "TagB"
            m = message(topic, f"receive-{i}")
            m.tag = tag
            m.keys = f"rk-{i}"
            m.add_property("seq", str(i))
            s = send(p, m)
            s["tag"] = tag
            sent.append(s)
        received = [view(m) for m in receive_n(c, 3, LONG_INVISIBLE_S, True, 15)]
        # The TagB message is filtered out: nothing more arrives.
        more = len(receive(c, 32, LONG_INVISIBLE_S))
        return {"sent": sent, "received": received, "afterwards": more}
    finally:
        shutdown(c, p)


def simple_ack(o, topic, group):
    p = producer(o, topic)
    c = simple_consumer(o, group, topic)
    try:
        s = send(p, message(topic, "ack-0"))
        got = receive_n(c, 1, LONG_INVISIBLE_S, False, 15)
        if not got:
            raise RuntimeError("nothing received")
        m = got[0]
        first = outcome(lambda: c.ack(m))
        second = outcome(lambda: c.ack(m))
        more = len(receive(c, 32, SHORT_INVISIBLE_S))
        return {"sent": [s], "received": [view(m)], "ack": first, "secondAck": second, "afterwards": more}
    finally:
        shutdown(c, p)


def simple_change_invisible(o, topic, group):
    p = producer(o, topic)
    c = simple_consumer(o, group, topic)
    try:
        send(p, message(topic, "change-ack"))
        send(p, message(topic, "change-back"))
        got = receive_n(c, 2, LONG_INVISIBLE_S, False, 15)
        by_body = {m.body.decode("utf-8"): m for m in got}
        ack_me, back = by_body.get("change-ack"), by_body.get("change-back")
        if ack_me is None or back is None:
            raise RuntimeError(f"received {len(got)} of 2")
        # A longer invisible time, then an ack: the ack uses the handle the change returned.
        c.change_invisible_duration(ack_me, 20)
        out = {"ackAfterChange": outcome(lambda: c.ack(ack_me))}
        # A shorter one: the message comes back after it.
        t0 = time.time()
        c.change_invisible_duration(back, SHORT_INVISIBLE_S)
        t1 = time.time()
        again = receive_n(c, 1, LONG_INVISIBLE_S, True, 10)
        t2 = time.time()
        if not again:
            raise RuntimeError("not redelivered after the change")
        redelivered = view(again[0])
        redelivered["sinceChangeStartMs"] = round((t2 - t0) * 1000)
        redelivered["sinceChangeEndMs"] = round((t2 - t1) * 1000)
        out["redelivered"] = redelivered
        out["afterwards"] = len(receive(c, 32, LONG_INVISIBLE_S))
        return out
    finally:
        shutdown(c, p)


def simple_redelivery(o, topic, group):
    p = producer(o, topic)
    c = simple_consumer(o, group, topic)
    try:
        s = send(p, message(topic, "redeliver-0"))
        t0 = time.time()
        first = receive(c, 1, SHORT_INVISIBLE_S)
        t1 = time.time()
        if not first:
            raise RuntimeError("nothing received")
        # No ack: it comes back once its invisible time is over.
        again = receive_n(c, 1, LONG_INVISIBLE_S, True, 10)
        t2 = time.time()
        if not again:
            raise RuntimeError("not redelivered")
        second = view(again[0])
        second["sinceReceiveStartMs"] = round((t2 - t0) * 1000)
        second["sinceReceiveEndMs"] = round((t2 - t1) * 1000)
        return {"sent": [s], "first": view(first[0]), "second": second,
                "staleAck": outcome(lambda: c.ack(first[0]))}
    finally:
        shutdown(c, p)


def simple_dlq(o, topic, group):
    """The group allows 3 deliveries (retryMaxTimes 2): then the message is in %DLQ%group."""
    p = producer(o, topic)
    c = simple_consumer(o, group, topic)
    deliveries = []
    try:
        s = send(p, message(topic, "dlq-0"))
        # Never ack; stop once nothing came back for 3 s after the last delivery.
        quiet_until = time.time() + 10
        while time.time() < quiet_until:
            for m in receive(c, 1, SHORT_INVISIBLE_S):
                deliveries.append(view(m))
                quiet_until = time.time() + SHORT_INVISIBLE_S + 3
    finally:
        shutdown(c, p)
    # The dead-letter queue is a topic like any other: consume it with the same client.
    d = simple_consumer(o, group, f"%DLQ%{group}")
    try:
        dlq = [view(m) for m in receive_n(d, 1, LONG_INVISIBLE_S, True, 10)]
    finally:
        shutdown(d)
    return {"sent": [s], "deliveries": deliveries, "dlq": dlq}


# ---- push consumer ---------------------------------------------------------------------------------

class Calls:
    def __init__(self):
        self.start = time.time()
        self.lock = threading.Lock()
        self.list = []

    def add(self, m, result):
        v = view(m)
        v["atMs"] = round((time.time() - self.start) * 1000)
        v["result"] = result
        with self.lock:
            self.list.append(v)

    def snapshot(self):
        with self.lock:
            return list(self.list)


class Countdown:
    def __init__(self, n):
        self.left = n
        self.lock = threading.Lock()
        self.done = threading.Event()

    def hit(self):
        with self.lock:
            self.left -= 1
            if self.left <= 0:
                self.done.set()


def push_success(o, topic, group):
    p = producer(o, topic)
    try:
        calls, done = Calls(), Countdown(10)

        def consume(m):
            calls.add(m, "SUCCESS")
            done.hit()
            return ConsumeResult.SUCCESS

        c = push_consumer(o, group, topic, 4, consume)
        sent = []
        try:
            for i in range(10):
                m = message(topic, f"push-{i}")
                m.tag = "T"
                sent.append(send(p, m))
            done.done.wait(20)
        finally:
            t = time.time()
            c.shutdown()
            close_ms = round((time.time() - t) * 1000)
        return {"sent": sent, "calls": calls.snapshot(), "closeMs": close_ms}
    finally:
        shutdown(p)


def push_retry(o, topic, group):
    """Each message fails twice, then succeeds: three deliveries spaced by the group's retry policy."""
    p = producer(o, topic)
    try:
        calls, done = Calls(), Countdown(2)

        def consume(m):
            if m.delivery_attempt >= 3:
                calls.add(m, "SUCCESS")
                done.hit()
                return ConsumeResult.SUCCESS
            calls.add(m, "FAILURE")
            return ConsumeResult.FAILURE

        c = push_consumer(o, group, topic, 4, consume)
        try:
            send(p, message(topic, "retry-0"))
            send(p, message(topic, "retry-1"))
            done.done.wait(30)
        finally:
            c.shutdown()
        return {"calls": calls.snapshot()}
    finally:
        shutdown(p)


def push_fifo(o, topic, group):
    """FIFO group: the first delivery of each group's message #1 fails; order must hold."""
    groups = ("Order-001", "Order-002", "Account-Alice")
    p = producer(o, topic)
    try:
        for seq in range(4):
            for g in groups:
                m = message(topic, f"{g}#{seq}")
                m.message_group = g
                send(p, m)
        calls, done = Calls(), Countdown(len(groups) * 4)
        failed = set()
        lock = threading.Lock()

        def consume(m):
            b = m.body.decode("utf-8")
            with lock:
                fail = b.endswith("#1") and b not in failed
                failed.add(b)
            if fail:
                calls.add(m, "FAILURE")
                return ConsumeResult.FAILURE
            calls.add(m, "SUCCESS")
            done.hit()
            return ConsumeResult.SUCCESS

        c = push_consumer(o, group, topic, 4, consume)
        try:
            done.done.wait(30)
        finally:
            c.shutdown()
        return {"calls": calls.snapshot()}
    finally:
        shutdown(p)


def push_shutdown(o, topic, group):
    """A slow listener on one thread; shut down while messages are cached and one is being consumed."""
    p = producer(o, topic)
    try:
        sent = [send(p, message(topic, f"shutdown-{i}")) for i in range(10)]
        calls, two = Calls(), Countdown(2)

        def consume(m):
            time.sleep(0.3)
            calls.add(m, "SUCCESS")
            two.hit()
            return ConsumeResult.SUCCESS

        c = push_consumer(o, group, topic, 1, consume)
        two.done.wait(20)
        t = time.time()
        c.shutdown()
        close_ms = round((time.time() - t) * 1000)
        return {"sent": sent, "calls": calls.snapshot(), "closeMs": close_ms}
    finally:
        shutdown(p)


# ---- access control --------------------------------------------------------------------------------

def attempt_send(o, topic):
    """A producer without topics (so its start-up needs no route) sends one message to `topic`."""
    p = Producer(config(o), (), tls_enable=o.tls)
    try:
        p.startup()
        return outcome(lambda: p.send(message(topic, "refused")))
    except Exception as e:  # noqa: BLE001 - a refused start-up is an outcome too
        return {"ok": False, "code": getattr(e, "code", None), "error": f"{type(e).__name__}: {e}"}
    finally:
        shutdown(p)


def acl_refused(o, topic, group):
    """With access control on: a wrong secret key, and a topic outside the user's rights."""
    wrong = Options.__new__(Options)
    wrong.__dict__.update(o.__dict__, secret_key=f"{o.secret_key}-wrong")
    return {"wrongSignature": attempt_send(wrong, topic), "forbiddenTopic": attempt_send(o, topic)}


SCENARIOS = {
    "producer-normal": producer_normal,
    "producer-fifo": producer_fifo,
    "producer-keys": producer_keys,
    "producer-tags": producer_tags,
    "producer-properties": producer_properties,
    "producer-delay": producer_delay,
    "producer-transaction": producer_transaction,
    "simple-receive": simple_receive,
    "simple-ack": simple_ack,
    "simple-change-invisible": simple_change_invisible,
    "simple-redelivery": simple_redelivery,
    "simple-dlq": simple_dlq,
    "push-success": push_success,
    "push-retry": push_retry,
    "push-fifo": push_fifo,
    "push-shutdown": push_shutdown,
    "acl-refused": acl_refused,
}


def run(o, scenario, topic, group):
    fn = SCENARIOS.get(scenario)
    if fn is None:
        raise ValueError(f"unknown scenario {scenario}")
    # The client (5.1.2) opens each Telemetry stream on the calling thread's asyncio loop, and only the
    # thread that created the shared channel to an endpoint has one (RpcChannel.create_channel sets
    # it): a client started from another thread fails with "There is no current event loop" and never
    # gets its Settings. The scenarios run in parallel threads, so give each thread the client's own
    # I/O loop first (constructing RpcClient starts that loop if nothing has yet).
    RpcClient()
    asyncio.set_event_loop(RpcClient.get_channel_io_loop())
    return fn(o, topic, group)


def main():
    try:
        o = Options(sys.argv[1:])
    except ValueError as e:
        print(f"usage error: {e}", file=sys.stderr)
        sys.exit(2)
    # Only the result lines may reach stdout.
    results = sys.stdout
    sys.stdout = sys.stderr
    pool = ThreadPoolExecutor(max_workers=len(o.runs))
    futures = [pool.submit(run, o, *r) for r in o.runs]
    deadline = time.time() + o.timeout_s
    for (scenario, _, _), f in zip(o.runs, futures):
        line = {"scenario": scenario}
        try:
            line.update(f.result(timeout=max(0.001, deadline - time.time())))
            line["ok"] = True
        except FutureTimeout:
            line.update(ok=False, error=f"scenario did not finish within {o.timeout_s} s")
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            line.update(ok=False, error=f"{type(e).__name__}: {e}")
        results.write(json.dumps(line, ensure_ascii=False) + "\n")
        results.flush()
    # The clients' own threads must not keep the process alive.
    os._exit(0)


if __name__ == "__main__":
    main()
