package vela.interop;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.MessageListener;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * The scenarios. Each returns the fields of its result line; the node:test driver
 * (test/interop/official/scenarios.ts) asserts on them and on the broker's state. The same scenario
 * names, message bodies and result fields are used by the Go and Python programs.
 */
final class Scenarios {
    /** The simple consumers' long-polling time. */
    static final Duration AWAIT = Duration.ofSeconds(2);
    /** A shorter one, for scenarios that show that nothing arrives within a time. */
    static final Duration SHORT_AWAIT = Duration.ofMillis(500);
    /** The shortest invisible time the test broker accepts. */
    static final Duration SHORT_INVISIBLE = Duration.ofSeconds(1);
    static final Duration LONG_INVISIBLE = Duration.ofSeconds(30);
    /** How far ahead delay messages are due. */
    static final Duration DELAY = Duration.ofSeconds(2);
    /** How long after its time a delay message is waited for. */
    static final Duration DELAY_WAIT = Duration.ofSeconds(8);
    /** How long receiving goes on to show that nothing else comes. */
    static final Duration DRAIN = Duration.ofMillis(1500);
    /** How long half messages are shown to be invisible. */
    static final Duration HALF_WAIT = Duration.ofMillis(500);
    /** How long committed and checked transactions are waited for. */
    static final Duration TX_WAIT = Duration.ofSeconds(10);

    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    private static final Pattern CODE = Pattern.compile("response-code=(\\d+)");

    private Scenarios() {
    }

    static Map<String, Object> run(Options o, Options.Run r) throws Exception {
        return switch (r.scenario()) {
            case "producer-normal" -> producerNormal(o, r);
            case "producer-fifo" -> producerFifo(o, r);
            case "producer-keys" -> producerKeys(o, r);
            case "producer-tags" -> producerTags(o, r);
            case "producer-properties" -> producerProperties(o, r);
            case "producer-delay" -> producerDelay(o, r);
            case "producer-transaction" -> producerTransaction(o, r);
            case "simple-receive" -> simpleReceive(o, r);
            case "simple-ack" -> simpleAck(o, r);
            case "simple-change-invisible" -> simpleChangeInvisible(o, r);
            case "simple-redelivery" -> simpleRedelivery(o, r);
            case "simple-dlq" -> simpleDlq(o, r);
            case "push-success" -> pushSuccess(o, r);
            case "push-retry" -> pushRetry(o, r);
            case "push-fifo" -> pushFifo(o, r);
            case "push-shutdown" -> pushShutdown(o, r);
            case "acl-refused" -> aclRefused(o, r);
            default -> throw new IllegalArgumentException("unknown scenario " + r.scenario());
        };
    }

    // ---- clients ----------------------------------------------------------------------------

    static ClientConfiguration config(Options o) {
        ClientConfigurationBuilder b = ClientConfiguration.newBuilder()
            .setEndpoints(o.endpoint)
            // The Java client's default is TLS: plaintext must be asked for.
            .enableSsl(o.tls)
            .setNamespace(o.namespace)
            .setRequestTimeout(Duration.ofSeconds(5));
        if (o.accessKey != null) {
            b.setCredentialProvider(new StaticSessionCredentialsProvider(o.accessKey, o.secretKey));
        }
        return b.build();
    }

    static Producer producer(Options o, String topic) throws ClientException {
        return PROVIDER.newProducerBuilder().setClientConfiguration(config(o)).setTopics(topic).build();
    }

    static SimpleConsumer simpleConsumer(Options o, String group, String topic, String filter)
        throws ClientException {
        return simpleConsumer(o, group, topic, filter, AWAIT);
    }

    static SimpleConsumer simpleConsumer(Options o, String group, String topic, String filter,
        Duration await) throws ClientException {
        return PROVIDER.newSimpleConsumerBuilder()
            .setClientConfiguration(config(o))
            .setConsumerGroup(group)
            .setAwaitDuration(await)
            .setSubscriptionExpressions(
                Map.of(topic, new FilterExpression(filter, FilterExpressionType.TAG)))
            .build();
    }

    static PushConsumer pushConsumer(Options o, String group, String topic, int threads,
        MessageListener listener) throws ClientException {
        return PROVIDER.newPushConsumerBuilder()
            .setClientConfiguration(config(o))
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Map.of(topic, FilterExpression.SUB_ALL))
            .setConsumptionThreadCount(threads)
            .setMessageListener(listener)
            .build();
    }

    static MessageBuilder message(String topic, String body) {
        return PROVIDER.newMessageBuilder().setTopic(topic).setBody(body.getBytes(StandardCharsets.UTF_8));
    }

    static Map<String, Object> sent(SendReceipt receipt, String body) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("messageId", receipt.getMessageId().toString());
        m.put("body", body);
        return m;
    }

    static String body(MessageView v) {
        ByteBuffer b = v.getBody().duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** A delivered message as the result lines show it. */
    static Map<String, Object> view(MessageView v) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("messageId", v.getMessageId().toString());
        m.put("topic", v.getTopic());
        m.put("body", body(v));
        m.put("tag", v.getTag().orElse(null));
        List<String> keys = new ArrayList<>(v.getKeys());
        Collections.sort(keys);
        m.put("keys", keys);
        m.put("messageGroup", v.getMessageGroup().orElse(null));
        m.put("properties", new HashMap<>(v.getProperties()));
        m.put("deliveryAttempt", v.getDeliveryAttempt());
        m.put("bornTimestamp", v.getBornTimestamp());
        return m;
    }

    /** An exception as a result line shows it: its class and message. */
    static String describe(Throwable t) {
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    /**
     * A refused call: the RocketMQ status code (the Java client puts it in the message, of the
     * exception or of one it wraps) and the error.
     */
    static Map<String, Object> failure(Throwable t) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ok", false);
        Integer code = null;
        for (Throwable c = t; c != null && code == null; c = c.getCause()) {
            Matcher matcher = CODE.matcher(String.valueOf(c.getMessage()));
            if (matcher.find()) {
                code = Integer.parseInt(matcher.group(1));
            }
        }
        m.put("code", code);
        m.put("error", describe(t));
        return m;
    }

    static Map<String, Object> success() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ok", true);
        return m;
    }

    /** Receive until `count` messages arrived or `timeout` passed; acks them unless told not to. */
    static List<MessageView> receiveN(SimpleConsumer c, int count, Duration invisible, boolean ack,
        Duration timeout) throws ClientException {
        List<MessageView> out = new ArrayList<>();
        long until = System.currentTimeMillis() + timeout.toMillis();
        while (out.size() < count && System.currentTimeMillis() < until) {
            for (MessageView v : c.receive(count - out.size(), invisible)) {
                if (ack) {
                    c.ack(v);
                }
                out.add(v);
            }
        }
        return out;
    }

    // ---- producer ---------------------------------------------------------------------------

    static Map<String, Object> producerNormal(Options o, Options.Run r) throws Exception {
        List<Object> sent = new ArrayList<>();
        try (Producer p = producer(o, r.topic())) {
            for (int i = 0; i < 5; i++) {
                String body = "normal-" + i;
                sent.add(sent(p.send(message(r.topic(), body).build()), body));
            }
        }
        return Map.of("sent", sent);
    }

    static Map<String, Object> producerFifo(Options o, Options.Run r) throws Exception {
        List<Object> sent = new ArrayList<>();
        try (Producer p = producer(o, r.topic())) {
            for (int seq = 0; seq < 4; seq++) {
                for (String g : List.of("Order-001", "Order-002", "Account-Alice")) {
                    String body = g + "#" + seq;
                    Message m = message(r.topic(), body).setMessageGroup(g).build();
                    Map<String, Object> s = sent(p.send(m), body);
                    s.put("messageGroup", g);
                    sent.add(s);
                }
            }
        }
        return Map.of("sent", sent);
    }

    static Map<String, Object> producerKeys(Options o, Options.Run r) throws Exception {
        List<Object> sent = new ArrayList<>();
        try (Producer p = producer(o, r.topic())) {
            for (int i = 0; i < 3; i++) {
                String body = "keys-" + i;
                String[] keys = {r.topic() + "-k" + i + "a", r.topic() + "-k" + i + "b"};
                Map<String, Object> s = sent(p.send(message(r.topic(), body).setKeys(keys).build()), body);
                s.put("keys", List.of(keys));
                sent.add(s);
            }
        }
        return Map.of("sent", sent);
    }

    static Map<String, Object> producerTags(Options o, Options.Run r) throws Exception {
        List<Object> sent = new ArrayList<>();
        try (Producer p = producer(o, r.topic())) {
            for (int i = 0; i < 4; i++) {
                String body = "tags-" + i;
                String tag = i % 2 == 0 ? "TagA" : "TagB";
                Map<String, Object> s = sent(p.send(message(r.topic(), body).setTag(tag).build()), body);
                s.put("tag", tag);
                sent.add(s);
            }
        }
        return Map.of("sent", sent);
    }

    static Map<String, Object> producerProperties(Options o, Options.Run r) throws Exception {
        Map<String, String> props = new LinkedHashMap<>();
        props.put("orderId", "42");
        props.put("unicode", "héllo ✓");
        props.put("with space", "a b");
        List<Object> sent = new ArrayList<>();
        try (Producer p = producer(o, r.topic())) {
            MessageBuilder b = message(r.topic(), "properties-0");
            props.forEach(b::addProperty);
            Map<String, Object> s = sent(p.send(b.build()), "properties-0");
            s.put("properties", props);
            sent.add(s);
        }
        return Map.of("sent", sent);
    }

    /**
     * A DELAY message due {@link #DELAY} from now, and a second one recalled before its time. The
     * consumer polls from before the send until the first arrives, then a little longer (the recalled
     * one, due at the same time, would come then); recalling the delivered one is refused.
     */
    static Map<String, Object> producerDelay(Options o, Options.Run r) throws Exception {
        try (SimpleConsumer c = simpleConsumer(o, r.group(), r.topic(), "*", SHORT_AWAIT);
             Producer p = producer(o, r.topic())) {
            long due = System.currentTimeMillis() + DELAY.toMillis();
            SendReceipt kept = p.send(message(r.topic(), "delay-kept").setDeliveryTimestamp(due).build());
            SendReceipt gone = p.send(message(r.topic(), "delay-gone").setDeliveryTimestamp(due).build());
            Map<String, Object> recall = new LinkedHashMap<>();
            try {
                recall.put("messageId", p.recallMessage(r.topic(), gone.getRecallHandle()).getMessageId().toString());
                recall.put("atMs", System.currentTimeMillis());
            } catch (Exception e) {
                recall = failure(e);
            }
            long firstPollMs = System.currentTimeMillis();
            List<Object> received = new ArrayList<>();
            int emptyPolls = 0;
            long until = due + DELAY_WAIT.toMillis();
            while (received.isEmpty() && System.currentTimeMillis() < until) {
                List<MessageView> got = c.receive(2, LONG_INVISIBLE);
                long at = System.currentTimeMillis();
                if (got.isEmpty()) {
                    emptyPolls++;
                }
                for (MessageView v : got) {
                    c.ack(v);
                    received.add(delayed(v, at));
                }
            }
            // Anything else (the recalled message) would be due now too.
            long drainUntil = System.currentTimeMillis() + DRAIN.toMillis();
            while (System.currentTimeMillis() < drainUntil) {
                for (MessageView v : c.receive(2, LONG_INVISIBLE)) {
                    c.ack(v);
                    received.add(delayed(v, System.currentTimeMillis()));
                }
            }
            Map<String, Object> recallAfter;
            try {
                p.recallMessage(r.topic(), kept.getRecallHandle());
                recallAfter = success();
            } catch (Exception e) {
                recallAfter = failure(e);
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("deliveryTimestamp", due);
            out.put("kept", receipt(kept, "delay-kept"));
            out.put("gone", receipt(gone, "delay-gone"));
            out.put("recall", recall);
            out.put("firstPollMs", firstPollMs);
            out.put("emptyPolls", emptyPolls);
            out.put("received", received);
            out.put("recallAfterDelivery", recallAfter);
            return out;
        }
    }

    static Map<String, Object> receipt(SendReceipt receipt, String body) {
        Map<String, Object> m = sent(receipt, body);
        m.put("recallHandle", receipt.getRecallHandle());
        return m;
    }

    /** A delivered delay message: its view, its delivery time and when the consumer got it. */
    static Map<String, Object> delayed(MessageView v, long receivedAtMs) {
        Map<String, Object> m = view(v);
        m.put("deliveryTimestamp", v.getDeliveryTimestamp().orElse(null));
        m.put("receivedAtMs", receivedAtMs);
        return m;
    }

    /**
     * Transactions on a TRANSACTION topic: two left open (the broker's orphan check asks this
     * producer's checker, which answers from the "local transaction state": commit one, roll back
     * the other), one committed and one rolled back by the application. Nothing is visible before
     * its end; the committed ones are delivered once.
     */
    static Map<String, Object> producerTransaction(Options o, Options.Run r) throws Exception {
        Map<String, TransactionResolution> local = new ConcurrentHashMap<>();
        local.put("tx-commit", TransactionResolution.COMMIT);
        local.put("tx-rollback", TransactionResolution.ROLLBACK);
        local.put("tx-orphan-commit", TransactionResolution.COMMIT);
        local.put("tx-orphan-rollback", TransactionResolution.ROLLBACK);
        List<Object> checks = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch orphansChecked = new CountDownLatch(2);
        try (SimpleConsumer c = simpleConsumer(o, r.group(), r.topic(), "*", SHORT_AWAIT);
             Producer p = PROVIDER.newProducerBuilder()
                 .setClientConfiguration(config(o))
                 .setTopics(r.topic())
                 .setTransactionChecker(v -> {
                     String b = body(v);
                     Map<String, Object> check = new LinkedHashMap<>();
                     check.put("messageId", v.getMessageId().toString());
                     check.put("topic", v.getTopic());
                     check.put("body", b);
                     check.put("atMs", System.currentTimeMillis());
                     checks.add(check);
                     if (b.startsWith("tx-orphan-")) {
                         orphansChecked.countDown();
                     }
                     return local.getOrDefault(b, TransactionResolution.UNKNOWN);
                 })
                 .build()) {
            List<Object> sent = new ArrayList<>();
            Map<String, Transaction> open = new LinkedHashMap<>();
            for (String b : List.of("tx-orphan-commit", "tx-orphan-rollback", "tx-commit", "tx-rollback")) {
                Transaction tx = p.beginTransaction();
                long start = System.currentTimeMillis();
                Map<String, Object> s = sent(p.send(message(r.topic(), b).build(), tx), b);
                s.put("sendStartMs", start);
                sent.add(s);
                open.put(b, tx);
            }
            // Half messages: nothing to receive yet.
            List<Object> beforeEnd = new ArrayList<>();
            for (MessageView v : receiveN(c, 1, LONG_INVISIBLE, true, HALF_WAIT)) {
                beforeEnd.add(view(v));
            }
            open.get("tx-commit").commit();
            open.get("tx-rollback").rollback();
            List<Object> received = new ArrayList<>();
            for (MessageView v : receiveN(c, 2, LONG_INVISIBLE, true, TX_WAIT)) {
                received.add(view(v));
            }
            orphansChecked.await(TX_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            // Whatever else would come (a rolled-back message, a duplicate) comes now.
            for (MessageView v : receiveN(c, 1, LONG_INVISIBLE, true, DRAIN)) {
                received.add(view(v));
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("sent", sent);
            out.put("beforeEnd", beforeEnd);
            out.put("received", received);
            synchronized (checks) {
                out.put("checks", new ArrayList<>(checks));
            }
            return out;
        }
    }

    // ---- simple consumer --------------------------------------------------------------------

    static Map<String, Object> simpleReceive(Options o, Options.Run r) throws Exception {
        List<Object> sent = new ArrayList<>();
        try (Producer p = producer(o, r.topic());
             SimpleConsumer c = simpleConsumer(o, r.group(), r.topic(), "TagA")) {
            for (int i = 0; i < 4; i++) {
                String body = "receive-" + i;
                String tag = i < 3 ? "TagA" : "TagB";
                Message m = message(r.topic(), body).setTag(tag).setKeys("rk-" + i)
                    .addProperty("seq", String.valueOf(i)).build();
                Map<String, Object> s = sent(p.send(m), body);
                s.put("tag", tag);
                sent.add(s);
            }
            List<Object> received = new ArrayList<>();
            for (MessageView v : receiveN(c, 3, LONG_INVISIBLE, true, Duration.ofSeconds(15))) {
                received.add(view(v));
            }
            // The TagB message is filtered out: nothing more arrives.
            int more = c.receive(32, LONG_INVISIBLE).size();
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("sent", sent);
            out.put("received", received);
            out.put("afterwards", more);
            return out;
        }
    }

    static Map<String, Object> simpleAck(Options o, Options.Run r) throws Exception {
        try (Producer p = producer(o, r.topic());
             SimpleConsumer c = simpleConsumer(o, r.group(), r.topic(), "*")) {
            Map<String, Object> s = sent(p.send(message(r.topic(), "ack-0").build()), "ack-0");
            List<MessageView> got = receiveN(c, 1, LONG_INVISIBLE, false, Duration.ofSeconds(15));
            if (got.isEmpty()) {
                throw new IllegalStateException("nothing received");
            }
            MessageView v = got.get(0);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("sent", List.of(s));
            out.put("received", List.of(view(v)));
            out.put("ack", ack(c, v));
            out.put("secondAck", ack(c, v));
            out.put("afterwards", c.receive(32, SHORT_INVISIBLE).size());
            return out;
        }
    }

    static Map<String, Object> ack(SimpleConsumer c, MessageView v) {
        try {
            c.ack(v);
            return success();
        } catch (Exception e) {
            return failure(e);
        }
    }

    static Map<String, Object> simpleChangeInvisible(Options o, Options.Run r) throws Exception {
        try (Producer p = producer(o, r.topic());
             SimpleConsumer c = simpleConsumer(o, r.group(), r.topic(), "*")) {
            p.send(message(r.topic(), "change-ack").build());
            p.send(message(r.topic(), "change-back").build());
            List<MessageView> got = receiveN(c, 2, LONG_INVISIBLE, false, Duration.ofSeconds(15));
            MessageView ackMe = null;
            MessageView back = null;
            for (MessageView v : got) {
                if (body(v).equals("change-ack")) {
                    ackMe = v;
                } else {
                    back = v;
                }
            }
            if (ackMe == null || back == null) {
                throw new IllegalStateException("received " + got.size() + " of 2");
            }
            Map<String, Object> out = new LinkedHashMap<>();
            // A longer invisible time, then an ack: the ack uses the handle the change returned.
            c.changeInvisibleDuration(ackMe, Duration.ofSeconds(20));
            out.put("ackAfterChange", ack(c, ackMe));
            // A shorter one: the message comes back after it.
            long t0 = System.currentTimeMillis();
            c.changeInvisibleDuration(back, SHORT_INVISIBLE);
            long t1 = System.currentTimeMillis();
            List<MessageView> again = receiveN(c, 1, LONG_INVISIBLE, true, Duration.ofSeconds(10));
            long t2 = System.currentTimeMillis();
            if (again.isEmpty()) {
                throw new IllegalStateException("not redelivered after the change");
            }
            Map<String, Object> redelivered = view(again.get(0));
            redelivered.put("sinceChangeStartMs", t2 - t0);
            redelivered.put("sinceChangeEndMs", t2 - t1);
            out.put("redelivered", redelivered);
            out.put("afterwards", c.receive(32, LONG_INVISIBLE).size());
            return out;
        }
    }

    static Map<String, Object> simpleRedelivery(Options o, Options.Run r) throws Exception {
        try (Producer p = producer(o, r.topic());
             SimpleConsumer c = simpleConsumer(o, r.group(), r.topic(), "*")) {
            Map<String, Object> s = sent(p.send(message(r.topic(), "redeliver-0").build()), "redeliver-0");
            long t0 = System.currentTimeMillis();
            List<MessageView> first = c.receive(1, SHORT_INVISIBLE);
            long t1 = System.currentTimeMillis();
            if (first.isEmpty()) {
                throw new IllegalStateException("nothing received");
            }
            // No ack: it comes back once its invisible time is over.
            List<MessageView> again = receiveN(c, 1, LONG_INVISIBLE, true, Duration.ofSeconds(10));
            long t2 = System.currentTimeMillis();
            if (again.isEmpty()) {
                throw new IllegalStateException("not redelivered");
            }
            Map<String, Object> second = view(again.get(0));
            second.put("sinceReceiveStartMs", t2 - t0);
            second.put("sinceReceiveEndMs", t2 - t1);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("sent", List.of(s));
            out.put("first", view(first.get(0)));
            out.put("second", second);
            out.put("staleAck", ack(c, first.get(0)));
            return out;
        }
    }

    /** The group allows 3 deliveries (retryMaxTimes 2): then the message is in %DLQ%group. */
    static Map<String, Object> simpleDlq(Options o, Options.Run r) throws Exception {
        List<Object> deliveries = new ArrayList<>();
        Map<String, Object> s;
        try (Producer p = producer(o, r.topic());
             SimpleConsumer c = simpleConsumer(o, r.group(), r.topic(), "*")) {
            s = sent(p.send(message(r.topic(), "dlq-0").build()), "dlq-0");
            // Never ack; stop once nothing came back for 3 s after the last delivery.
            long quietUntil = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < quietUntil) {
                for (MessageView v : c.receive(1, SHORT_INVISIBLE)) {
                    deliveries.add(view(v));
                    quietUntil = System.currentTimeMillis() + SHORT_INVISIBLE.toMillis() + 3_000;
                }
            }
        }
        // The dead-letter queue is a topic like any other: consume it with the same client.
        List<Object> dlq = new ArrayList<>();
        try (SimpleConsumer d = simpleConsumer(o, r.group(), "%DLQ%" + r.group(), "*")) {
            for (MessageView v : receiveN(d, 1, LONG_INVISIBLE, true, Duration.ofSeconds(10))) {
                dlq.add(view(v));
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", List.of(s));
        out.put("deliveries", deliveries);
        out.put("dlq", dlq);
        return out;
    }

    // ---- push consumer ----------------------------------------------------------------------

    /** One listener call, as the result lines show it. */
    static Map<String, Object> call(MessageView v, long start, String result) {
        Map<String, Object> m = view(v);
        m.put("atMs", System.currentTimeMillis() - start);
        m.put("result", result);
        return m;
    }

    static Map<String, Object> pushSuccess(Options o, Options.Run r) throws Exception {
        List<Object> sent = new ArrayList<>();
        List<Object> calls = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(10);
        long start = System.currentTimeMillis();
        long closeMs;
        try (Producer p = producer(o, r.topic())) {
            PushConsumer c = pushConsumer(o, r.group(), r.topic(), 4, v -> {
                calls.add(call(v, start, "SUCCESS"));
                done.countDown();
                return ConsumeResult.SUCCESS;
            });
            try {
                for (int i = 0; i < 10; i++) {
                    String body = "push-" + i;
                    sent.add(sent(p.send(message(r.topic(), body).setTag("T").build()), body));
                }
                done.await(20, TimeUnit.SECONDS);
            } finally {
                long t = System.currentTimeMillis();
                c.close();
                closeMs = System.currentTimeMillis() - t;
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", sent);
        synchronized (calls) {
            out.put("calls", new ArrayList<>(calls));
        }
        out.put("closeMs", closeMs);
        return out;
    }

    /** Each message fails twice, then succeeds: three deliveries spaced by the group's retry policy. */
    static Map<String, Object> pushRetry(Options o, Options.Run r) throws Exception {
        List<Object> calls = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(2);
        long start = System.currentTimeMillis();
        try (Producer p = producer(o, r.topic())) {
            PushConsumer c = pushConsumer(o, r.group(), r.topic(), 4, v -> {
                boolean ok = v.getDeliveryAttempt() >= 3;
                calls.add(call(v, start, ok ? "SUCCESS" : "FAILURE"));
                if (ok) {
                    done.countDown();
                }
                return ok ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE;
            });
            try {
                p.send(message(r.topic(), "retry-0").build());
                p.send(message(r.topic(), "retry-1").build());
                done.await(30, TimeUnit.SECONDS);
            } finally {
                c.close();
            }
        }
        synchronized (calls) {
            return Map.of("calls", new ArrayList<>(calls));
        }
    }

    /** FIFO group: the first delivery of each group's message #1 fails; order must hold. */
    static Map<String, Object> pushFifo(Options o, Options.Run r) throws Exception {
        List<String> groups = List.of("Order-001", "Order-002", "Account-Alice");
        List<Object> calls = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(groups.size() * 4);
        Set<String> failedOnce = ConcurrentHashMap.newKeySet();
        long start = System.currentTimeMillis();
        try (Producer p = producer(o, r.topic())) {
            for (int seq = 0; seq < 4; seq++) {
                for (String g : groups) {
                    p.send(message(r.topic(), g + "#" + seq).setMessageGroup(g).build());
                }
            }
            PushConsumer c = pushConsumer(o, r.group(), r.topic(), 4, v -> {
                String b = body(v);
                boolean fail = b.endsWith("#1") && failedOnce.add(b);
                calls.add(call(v, start, fail ? "FAILURE" : "SUCCESS"));
                if (!fail) {
                    done.countDown();
                }
                return fail ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
            });
            try {
                done.await(30, TimeUnit.SECONDS);
            } finally {
                c.close();
            }
        }
        synchronized (calls) {
            return Map.of("calls", new ArrayList<>(calls));
        }
    }

    /** A slow listener on one thread; close() while messages are cached and one is in the listener. */
    static Map<String, Object> pushShutdown(Options o, Options.Run r) throws Exception {
        List<Object> sent = new ArrayList<>();
        List<Object> calls = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch two = new CountDownLatch(2);
        long start = System.currentTimeMillis();
        long closeMs;
        try (Producer p = producer(o, r.topic())) {
            for (int i = 0; i < 10; i++) {
                String body = "shutdown-" + i;
                sent.add(sent(p.send(message(r.topic(), body).build()), body));
            }
            PushConsumer c = pushConsumer(o, r.group(), r.topic(), 1, v -> {
                try {
                    Thread.sleep(300);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    calls.add(call(v, start, "INTERRUPTED"));
                    return ConsumeResult.FAILURE;
                }
                calls.add(call(v, start, "SUCCESS"));
                two.countDown();
                return ConsumeResult.SUCCESS;
            });
            two.await(20, TimeUnit.SECONDS);
            long t = System.currentTimeMillis();
            c.close();
            closeMs = System.currentTimeMillis() - t;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", sent);
        synchronized (calls) {
            out.put("calls", new ArrayList<>(calls));
        }
        out.put("closeMs", closeMs);
        return out;
    }

    // ---- access control ---------------------------------------------------------------------

    /**
     * With access control on: a producer signing with a wrong secret key, and one signing right but
     * sending to a topic outside the user's rights (the run's topic). Both sends must be refused.
     */
    static Map<String, Object> aclRefused(Options o, Options.Run r) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("wrongSignature", attemptSend(o.withSecretKey(o.secretKey + "-wrong"), r.topic()));
        out.put("forbiddenTopic", attemptSend(o, r.topic()));
        return out;
    }

    static Map<String, Object> attemptSend(Options o, String topic) {
        try (Producer p = PROVIDER.newProducerBuilder().setClientConfiguration(config(o)).build()) {
            p.send(message(topic, "refused").build());
            return success();
        } catch (Throwable t) {
            return failure(t);
        }
    }
}
