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
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
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
 *   send NS TOPIC N [TAG]                N sync sends (for cross-protocol tests)
 *   consume NS TOPIC GROUP N             a push consumer printing N messages (cross-protocol)
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
                case "send": send(args[2], Integer.parseInt(args[3]), args.length > 4 ? args[4] : "TagA"); break;
                case "consume": consume(args[2], args[3], Integer.parseInt(args[4])); break;
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
            "properties", new TreeMap<>(m.getProperties()));
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

    static void send(String topic, int n, String tag) throws Exception {
        DefaultMQProducer p = producer();
        try {
            for (int i = 0; i < n; i++) {
                Message m = msg(topic, tag, "x-" + i, "from java " + i);
                m.putUserProperty("color", "blue");
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
