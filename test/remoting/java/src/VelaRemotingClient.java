import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;

/**
 * The Java Remoting client (org.apache.rocketmq:rocketmq-client) driven by Vela's tests. Each
 * scenario runs in one JVM and prints what happened as JSON lines starting with "@@ " on stdout
 * (the client's own logging goes elsewhere); the Node test asserts on them and on the broker.
 *
 *   produce NS TOPIC                     sync, async, one-way, batch and ordered (selector) sends
 *   push NS TOPIC GROUP MODE [N]         MODE: concurrent | retry | dlq | orderly | broadcast
 *   litepull-subscribe NS TOPIC GROUP N  two lite pull consumers share the topic's queues
 *   litepull-assign NS TOPIC GROUP       assign queue 0, read it, seek back to offset 2, poll
 *   delay NS TOPIC GROUP                 delay levels and timer properties, received by a push consumer
 *   transaction NS TOPIC GROUP           TransactionMQProducer: commit, rollback, unknown → checker
 *   send NS TOPIC N [TAG]                N sync sends (for cross-protocol tests)
 *   consume NS TOPIC GROUP N             a push consumer printing N messages (cross-protocol)
 *   serve NS TOPIC GROUP                 a push consumer that runs until its stdin closes (for the
 *                                        admin tools' calls to a consumer); prints "ready" with its
 *                                        client id, then every message its listener gets
 *   acl-send NS TOPIC N AK SK            N sync sends signed with AclClientRPCHook(AK, SK); a refused
 *                                        send prints "refused" with the error and stops
 *   acl-consume NS TOPIC GROUP N AK SK   a push consumer signed with AclClientRPCHook(AK, SK)
 *   compressed NS TOPIC GROUP TYPE       a producer compressing with TYPE (ZLIB | LZ4 | ZSTD): two
 *                                        large bodies and a small one, then a push consumer
 *   bench NS TOPIC GROUP N SIZE THREADS  throughput: N sync sends of SIZE bytes from THREADS threads,
 *                                        then a push consumer receiving them (bench/remoting-bench.ts)
 */
public class VelaRemotingClient {
    static String ns;

    public static void main(String[] args) throws Exception {
        ns = args[1];
        try {
            switch (args[0]) {
                case "produce": produce(args[2]); break;
                case "push": push(args[2], args[3], args[4], args.length > 5 ? Integer.parseInt(args[5]) : 0); break;
                case "litepull-subscribe": litePullSubscribe(args[2], args[3], Integer.parseInt(args[4])); break;
                case "litepull-assign": litePullAssign(args[2], args[3]); break;
                case "delay": delay(args[2], args[3]); break;
                case "transaction": transaction(args[2], args[3]); break;
                case "send": send(args[2], Integer.parseInt(args[3]), args.length > 4 ? args[4] : "TagA"); break;
                case "consume": consume(args[2], args[3], Integer.parseInt(args[4])); break;
                case "compressed": compressed(args[2], args[3], args[4]); break;
                case "serve": serve(args[2], args[3]); break;
                case "acl-send": aclSend(args[2], Integer.parseInt(args[3]), args[4], args[5]); break;
                case "acl-consume": aclConsume(args[2], args[3], Integer.parseInt(args[4]), args[5], args[6]); break;
                case "bench": bench(args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]), Integer.parseInt(args[6])); break;
                default: throw new IllegalArgumentException("unknown scenario " + args[0]);
            }
            out("done", "ok", "true");
        } catch (Throwable t) {
            out("error", "message", String.valueOf(t));
            t.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    // ---------------------------------------------------------------------------------------------

    static synchronized void out(String event, Object... kv) {
        StringBuilder sb = new StringBuilder("@@ {\"event\":").append(json(event));
        for (int i = 0; i + 1 < kv.length; i += 2) sb.append(',').append(json(String.valueOf(kv[i]))).append(':').append(json(kv[i + 1]));
        System.out.println(sb.append('}'));
        System.out.flush();
    }

    static String json(Object v) {
        if (v == null) return "null";
        if (v instanceof Number || v instanceof Boolean) return v.toString();
        if (v instanceof Map) {
            StringBuilder sb = new StringBuilder("{");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (sb.length() > 1) sb.append(',');
                sb.append(json(String.valueOf(e.getKey()))).append(':').append(json(e.getValue()));
            }
            return sb.append('}').toString();
        }
        String s = v.toString();
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }

    static void result(String kind, SendResult r) {
        out("sent", "kind", kind, "status", r.getSendStatus().name(), "msgId", r.getMsgId(), "offsetMsgId", r.getOffsetMsgId(),
            "queueId", r.getMessageQueue().getQueueId(), "queueOffset", r.getQueueOffset());
    }

    static void received(String who, MessageExt m) {
        out("received", "who", who, "msgId", m.getMsgId(), "offsetMsgId", m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : null, "topic", m.getTopic(),
            "tags", m.getTags(), "keys", m.getKeys(), "body", new String(m.getBody(), StandardCharsets.UTF_8),
            "queueId", m.getQueueId(), "queueOffset", m.getQueueOffset(), "reconsumeTimes", m.getReconsumeTimes(),
            "flag", m.getFlag(), "sysFlag", m.getSysFlag(),
            "properties", new TreeMap<>(m.getProperties()), "at", System.currentTimeMillis());
    }

    static DefaultMQProducer producer() throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("PG_" + System.nanoTime());
        p.setNamesrvAddr(ns);
        p.setInstanceName("p" + System.nanoTime());
        p.setSendMsgTimeout(10_000);
        p.setMqClientApiTimeout(10_000); // the test machine may be heavily loaded
        p.start();
        return p;
    }

    static Message msg(String topic, String tag, String key, String body) {
        Message m = new Message(topic, tag, key, body.getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("origin", "java");
        return m;
    }

    static DefaultMQPushConsumer pushConsumer(String group, String instance) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName(instance);
        c.setMqClientApiTimeout(10_000);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPullInterval(0);
        return c;
    }

    static void await(CountDownLatch latch, String what) throws InterruptedException {
        if (!latch.await(40, TimeUnit.SECONDS)) throw new IllegalStateException("timed out waiting for " + what + " (" + latch.getCount() + " left)");
    }

    // ---------------------------------------------------------------------------------------------

    static void produce(String topic) throws Exception {
        DefaultMQProducer p = producer();
        try {
            for (int i = 0; i < 3; i++) result("sync", p.send(msg(topic, "TagA", "sync-" + i, "sync " + i)));
            CountDownLatch async = new CountDownLatch(3);
            for (int i = 0; i < 3; i++) {
                p.send(msg(topic, "TagA", "async-" + i, "async " + i), new SendCallback() {
                    public void onSuccess(SendResult r) { result("async", r); async.countDown(); }
                    public void onException(Throwable e) { out("error", "message", String.valueOf(e)); }
                });
            }
            await(async, "async sends");
            for (int i = 0; i < 3; i++) {
                p.sendOneway(msg(topic, "TagA", "oneway-" + i, "oneway " + i));
                out("sent", "kind", "oneway");
            }
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < 3; i++) batch.add(msg(topic, "TagB", "batch-" + i, "batch " + i));
            result("batch", p.send(batch));
            for (int i = 0; i < 8; i++) {
                int orderId = i % 2 + 1;
                SendResult r = p.send(msg(topic, "TagC", "order-" + orderId, "order " + orderId + " step " + i),
                    (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size()), orderId);
                result("ordered", r);
            }
        } finally {
            p.shutdown();
        }
    }

    static void push(String topic, String group, String mode, int n) throws Exception {
        DefaultMQProducer p = producer();
        try {
            switch (mode) {
                case "concurrent": pushConcurrent(p, topic, group); break;
                case "retry": pushRetry(p, topic, group, false); break;
                case "dlq": pushRetry(p, topic, group, true); break;
                case "orderly": pushOrderly(p, topic, group); break;
                case "broadcast": pushBroadcast(p, topic, group); break;
                default: throw new IllegalArgumentException(mode);
            }
        } finally {
            p.shutdown();
        }
    }

    static void pushConcurrent(DefaultMQProducer p, String topic, String group) throws Exception {
        for (int i = 0; i < 6; i++) result("sync", p.send(msg(topic, i % 2 == 0 ? "TagA" : "TagB", "key-" + i, "body " + i)));
        CountDownLatch latch = new CountDownLatch(3);
        DefaultMQPushConsumer c = pushConsumer(group, "c1");
        c.subscribe(topic, "TagA");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) { received("c1", m); latch.countDown(); }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        await(latch, "TagA messages");
        Thread.sleep(1000); // anything extra would show up now
        c.shutdown();
    }

    static void pushRetry(DefaultMQProducer p, String topic, String group, boolean toDlq) throws Exception {
        for (int i = 0; i < 2; i++) result("sync", p.send(msg(topic, "TagA", "retry-" + i, "retry " + i)));
        CountDownLatch latch = new CountDownLatch(4); // each message twice
        DefaultMQPushConsumer c = pushConsumer(group, "c1");
        if (toDlq) c.setMaxReconsumeTimes(1);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            MessageExt m = msgs.get(0);
            received("c1", m);
            latch.countDown();
            if (toDlq || m.getReconsumeTimes() == 0) {
                ctx.setDelayLevelWhenNextConsume(1); // 1 s
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        await(latch, "deliveries");
        Thread.sleep(toDlq ? 2500 : 1000); // a third delivery would show up now
        c.shutdown();
    }

    static void pushOrderly(DefaultMQProducer p, String topic, String group) throws Exception {
        for (int i = 0; i < 15; i++) {
            int key = i % 3;
            p.send(msg(topic, "TagA", "k" + key, "k" + key + ":" + (i / 3)), (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size()), key);
        }
        CountDownLatch latch = new CountDownLatch(15);
        AtomicInteger failedOnce = new AtomicInteger();
        DefaultMQPushConsumer c = pushConsumer(group, "c1");
        c.setConsumeMessageBatchMaxSize(1);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            MessageExt m = msgs.get(0);
            String body = new String(m.getBody(), StandardCharsets.UTF_8);
            // The first message of k1 fails once: the queue must hold back what follows it.
            if (body.equals("k1:0") && failedOnce.getAndIncrement() == 0) {
                ctx.setSuspendCurrentQueueTimeMillis(200);
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
            }
            received("c1", m);
            latch.countDown();
            return ConsumeOrderlyStatus.SUCCESS;
        });
        c.start();
        await(latch, "ordered messages");
        c.shutdown();
    }

    static void pushBroadcast(DefaultMQProducer p, String topic, String group) throws Exception {
        CountDownLatch latch = new CountDownLatch(8);
        List<DefaultMQPushConsumer> cs = new ArrayList<>();
        for (String who : new String[] {"a", "b"}) {
            DefaultMQPushConsumer c = pushConsumer(group, who);
            c.setMessageModel(MessageModel.BROADCASTING);
            c.subscribe(topic, "*");
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) { received(who, m); latch.countDown(); }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.start();
            cs.add(c);
        }
        for (int i = 0; i < 4; i++) result("sync", p.send(msg(topic, "TagA", "bc-" + i, "broadcast " + i)));
        await(latch, "broadcast deliveries");
        for (DefaultMQPushConsumer c : cs) c.shutdown();
    }

    static DefaultLitePullConsumer litePull(String group, String instance) {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName(instance);
        c.setMqClientApiTimeout(10_000);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollTimeoutMillis(500);
        return c;
    }

    static void litePullSubscribe(String topic, String group, int n) throws Exception {
        DefaultMQProducer p = producer();
        DefaultLitePullConsumer a = litePull(group, "a");
        DefaultLitePullConsumer b = litePull(group, "b");
        try {
            a.subscribe(topic, "*");
            b.subscribe(topic, "*");
            a.start();
            b.start();
            // Both are members once the broker told them of each other (NOTIFY_CONSUMER_IDS_CHANGED).
            Thread.sleep(2000);
            for (int i = 0; i < n; i++) p.send(msg(topic, "TagA", "lp-" + i, "lite " + i), (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size()), i);
            Map<String, Boolean> seen = new ConcurrentHashMap<>();
            long until = System.currentTimeMillis() + 40_000;
            while (seen.size() < n && System.currentTimeMillis() < until) {
                for (DefaultLitePullConsumer c : new DefaultLitePullConsumer[] {a, b}) {
                    for (MessageExt m : c.poll(300)) {
                        received(c == a ? "a" : "b", m);
                        seen.put(new String(m.getBody(), StandardCharsets.UTF_8), true);
                    }
                }
            }
            if (seen.size() < n) throw new IllegalStateException("lite pull got " + seen.size() + " of " + n);
            a.commitSync();
            b.commitSync();
        } finally {
            a.shutdown();
            b.shutdown();
            p.shutdown();
        }
    }

    static void litePullAssign(String topic, String group) throws Exception {
        DefaultMQProducer p = producer();
        DefaultLitePullConsumer c = litePull(group, "assign");
        c.setAutoCommit(false);
        try {
            for (int i = 0; i < 5; i++) p.send(msg(topic, "TagA", "as-" + i, "assigned " + i), (mqs, m, arg) -> mqs.get(0), i);
            c.start();
            Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
            MessageQueue q0 = null;
            for (MessageQueue q : mqs) if (q.getQueueId() == 0) q0 = q;
            c.assign(Collections.singletonList(q0));
            // Read the whole queue first, then rewind: a seek racing the first pull after assign()
            // is a race inside the client (its pull task may already have fetched from offset 0).
            List<MessageExt> first = new ArrayList<>();
            long until = System.currentTimeMillis() + 20_000;
            while (first.size() < 5 && System.currentTimeMillis() < until) first.addAll(c.poll(300));
            for (MessageExt m : first) received("before-seek", m);
            c.seek(q0, 2);
            List<MessageExt> got = new ArrayList<>();
            until = System.currentTimeMillis() + 20_000;
            while (got.size() < 3 && System.currentTimeMillis() < until) got.addAll(c.poll(300));
            for (MessageExt m : got) received("assign", m);
            out("queues", "count", mqs.size());
        } finally {
            c.shutdown();
            p.shutdown();
        }
    }

    /**
     * Delay levels 1 (1 s) and 2 (5 s), level 19 (above the highest: clamped to 18, 2 h), and the 5.x
     * timer properties (TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS, one of them in the past),
     * consumed by a push consumer that is already running. "sent" carries the time before the send.
     */
    static void delay(String topic, String group) throws Exception {
        DefaultMQProducer p = producer();
        CountDownLatch latch = new CountDownLatch(6);
        DefaultMQPushConsumer c = pushConsumer(group, "delay");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) { received("delay", m); latch.countDown(); }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            String[] kinds = {"level-1", "level-2", "level-19", "sec-2", "ms-1500", "deliver-2500", "deliver-past"};
            for (String kind : kinds) {
                Message m = msg(topic, "TagD", kind, kind);
                long before = System.currentTimeMillis();
                switch (kind) {
                    case "level-1": m.setDelayTimeLevel(1); break;
                    case "level-2": m.setDelayTimeLevel(2); break;
                    case "level-19": m.setDelayTimeLevel(19); break;
                    case "sec-2": m.setDelayTimeSec(2); break;
                    case "ms-1500": m.setDelayTimeMs(1500); break;
                    case "deliver-2500": m.setDeliverTimeMs(before + 2500); break;
                    default: m.setDeliverTimeMs(before - 1000); break;
                }
                SendResult r = p.send(m);
                out("sent", "kind", kind, "status", r.getSendStatus().name(), "msgId", r.getMsgId(), "before", before);
            }
            await(latch, "delayed messages");
            Thread.sleep(500);
            commitSync(c);
        } finally {
            c.shutdown();
            p.shutdown();
        }
    }

    /**
     * A TransactionMQProducer: "commit" and "rollback" end at once; "unknown-commit" is UNKNOW until
     * the broker's second check, which commits it; "unknown-rollback" is rolled back by the first
     * check. A push consumer of GROUP prints what becomes visible.
     */
    static void transaction(String topic, String group) throws Exception {
        TransactionMQProducer p = new TransactionMQProducer("TPG_" + System.nanoTime());
        p.setNamesrvAddr(ns);
        p.setInstanceName("t" + System.nanoTime());
        p.setSendMsgTimeout(10_000);
        p.setMqClientApiTimeout(10_000);
        Map<String, Integer> checks = new ConcurrentHashMap<>();
        CountDownLatch resolved = new CountDownLatch(2);
        p.setTransactionListener(new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message m, Object arg) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                out("executed", "body", body, "transactionId", m.getTransactionId());
                if (body.equals("commit")) return LocalTransactionState.COMMIT_MESSAGE;
                if (body.equals("rollback")) return LocalTransactionState.ROLLBACK_MESSAGE;
                return LocalTransactionState.UNKNOW;
            }

            public LocalTransactionState checkLocalTransaction(MessageExt m) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                int n = checks.merge(body, 1, Integer::sum);
                out("checked", "body", body, "times", n, "topic", m.getTopic(), "keys", m.getKeys(), "tags", m.getTags(),
                    "transactionId", m.getTransactionId(), "properties", new TreeMap<>(m.getProperties()), "at", System.currentTimeMillis());
                if (body.equals("unknown-commit")) {
                    if (n < 2) return LocalTransactionState.UNKNOW;
                    resolved.countDown();
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
                if (body.equals("unknown-rollback")) {
                    resolved.countDown();
                    return LocalTransactionState.ROLLBACK_MESSAGE;
                }
                return LocalTransactionState.UNKNOW;
            }
        });
        p.start();
        CountDownLatch visible = new CountDownLatch(2);
        DefaultMQPushConsumer c = pushConsumer(group, "tx");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) { received("tx", m); visible.countDown(); }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            for (String body : new String[] {"commit", "rollback", "unknown-commit", "unknown-rollback"}) {
                TransactionSendResult r = p.sendMessageInTransaction(msg(topic, "TagT", "tx-" + body, body), null);
                out("sent", "kind", body, "status", r.getSendStatus().name(), "localState", r.getLocalTransactionState().name(),
                    "msgId", r.getMsgId(), "offsetMsgId", r.getOffsetMsgId(), "transactionId", r.getTransactionId(), "at", System.currentTimeMillis());
            }
            await(resolved, "the checks");
            await(visible, "the committed messages");
            Thread.sleep(1500); // a rolled-back message would show up now
            commitSync(c);
        } finally {
            c.shutdown();
            p.shutdown();
        }
    }

    static void send(String topic, int n, String tag) throws Exception {
        DefaultMQProducer p = producer();
        try {
            for (int i = 0; i < n; i++) {
                Message m = msg(topic, tag, "x-" + i, "from java " + i);
                m.putUserProperty("color", "blue");
                m.setFlag(100 + i);
                result("sync", p.send(m));
            }
        } finally {
            p.shutdown();
        }
    }

    static void consume(String topic, String group, int n) throws Exception {
        CountDownLatch latch = new CountDownLatch(n);
        DefaultMQPushConsumer c = pushConsumer(group, "cross");
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) { received("cross", m); latch.countDown(); }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        await(latch, "messages");
        commitSync(c);
        c.shutdown();
    }

    static org.apache.rocketmq.remoting.RPCHook aclHook(String ak, String sk) {
        return new org.apache.rocketmq.acl.common.AclClientRPCHook(new org.apache.rocketmq.acl.common.SessionCredentials(ak, sk));
    }

    static void aclSend(String topic, int n, String ak, String sk) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("PG_acl_" + System.nanoTime(), aclHook(ak, sk));
        p.setNamesrvAddr(ns);
        p.setInstanceName("p" + System.nanoTime());
        p.setSendMsgTimeout(10_000);
        p.setMqClientApiTimeout(10_000);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        try {
            for (int i = 0; i < n; i++) {
                try {
                    result("sync", p.send(msg(topic, "TagA", "acl-" + i, "signed " + i)));
                } catch (Exception e) {
                    Throwable root = e;
                    StringBuilder why = new StringBuilder();
                    for (; root != null; root = root.getCause()) why.append(root).append(" | ");
                    out("refused", "error", why.toString());
                    return;
                }
            }
        } finally {
            p.shutdown();
        }
    }

    static void aclConsume(String topic, String group, int n, String ak, String sk) throws Exception {
        CountDownLatch latch = new CountDownLatch(n);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, aclHook(ak, sk),
            new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely());
        c.setNamesrvAddr(ns);
        c.setInstanceName("acl" + System.nanoTime());
        c.setMqClientApiTimeout(10_000);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) { received("acl", m); latch.countDown(); }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        await(latch, "messages");
        commitSync(c);
        c.shutdown();
    }

    static void serve(String topic, String group) throws Exception {
        DefaultMQPushConsumer c = pushConsumer(group, "serve" + System.nanoTime());
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) received("listener", m);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        out("ready", "clientId", c.getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId());
        while (System.in.read() >= 0) { /* until the test closes stdin */ }
        c.shutdown();
    }

    static void compressed(String topic, String group, String type) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("PG_" + System.nanoTime());
        p.setNamesrvAddr(ns);
        p.setInstanceName("p" + System.nanoTime());
        p.setSendMsgTimeout(10_000);
        p.setMqClientApiTimeout(10_000);
        p.setCompressType(org.apache.rocketmq.common.compression.CompressionType.valueOf(type));
        p.setCompressMsgBodyOverHowmuch(1024);
        p.start();
        try {
            for (int i = 0; i < 3; i++) {
                StringBuilder body = new StringBuilder();
                int lines = i == 2 ? 1 : 2000;
                for (int l = 0; l < lines; l++) body.append(type).append(" body ").append(i).append(" line ").append(l).append('\n');
                Message m = msg(topic, "TagC", "c-" + i, body.toString());
                m.setFlag(7 + i);
                result("sync", p.send(m));
            }
        } finally {
            p.shutdown();
        }
        consume(topic, group, 3);
    }

    /**
     * Commit the consumer's offsets with request/response calls: at shutdown the client commits them
     * one-way, and a JVM that exits right after may not have sent them yet.
     */
    static void commitSync(DefaultMQPushConsumer c) throws Exception {
        Thread.sleep(200); // let the last consumed batch update the local offsets
        org.apache.rocketmq.client.consumer.store.OffsetStore store = c.getOffsetStore();
        for (MessageQueue mq : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
            long offset = store.readOffset(mq, org.apache.rocketmq.client.consumer.store.ReadOffsetType.READ_FROM_MEMORY);
            if (offset >= 0) store.updateConsumeOffsetToBroker(mq, offset, false);
        }
    }

    static void bench(String topic, String group, int n, int size, int threads) throws Exception {
        DefaultMQProducer p = producer();
        byte[] body = new byte[size];
        java.util.Arrays.fill(body, (byte) 'a');
        try {
            AtomicInteger next = new AtomicInteger();
            List<Thread> ts = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                Thread th = new Thread(() -> {
                    try {
                        while (next.getAndIncrement() < n) p.send(new Message(topic, "TagA", body));
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                th.start();
                ts.add(th);
            }
            for (Thread th : ts) th.join();
            double produceSecs = (System.nanoTime() - t0) / 1e9;
            out("produced", "messages", n, "seconds", produceSecs, "perSecond", n / produceSecs);
        } finally {
            p.shutdown();
        }
        CountDownLatch latch = new CountDownLatch(n);
        DefaultMQPushConsumer c = pushConsumer(group, "bench");
        c.setConsumeThreadMin(4);
        c.setConsumeThreadMax(4);
        c.setPullBatchSize(32);
        c.setConsumeMessageBatchMaxSize(32);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (int i = 0; i < msgs.size(); i++) latch.countDown();
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long t1 = System.nanoTime();
        c.start();
        if (!latch.await(300, TimeUnit.SECONDS)) throw new IllegalStateException("consumed " + (n - latch.getCount()) + " of " + n);
        double consumeSecs = (System.nanoTime() - t1) / 1e9;
        out("consumed", "messages", n, "seconds", consumeSecs, "perSecond", n / consumeSecs);
        c.shutdown();
    }
}
