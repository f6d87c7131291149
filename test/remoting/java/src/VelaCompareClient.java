import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * A client child of `npm run bench:compare` for the Remoting rows (bench/compare/remoting-rows.ts):
 * the Java rocketmq-client against Vela's Remoting port, following the harness's protocol — `BEGIN`
 * and `END` around the measured part, then `RESULT <json>` (the harness's ClientResult) or
 * `ERROR <json string>`.
 *
 *   VelaCompareClient NS WORKLOAD TOPIC COUNT INFLIGHT WARMUP TIME_LIMIT_MS BODY_SIZE
 *
 * w1a / w1b: COUNT confirmed sends (async, INFLIGHT in flight; per-send latency); w2: a backlog of
 * WARMUP + COUNT filled first (untimed), then one push consumer (clustering, 4 consume threads,
 * 32-message pulls) receives it all and commits its offsets; measured from the batch that takes it
 * past the first WARMUP messages.
 */
public class VelaCompareClient {
    static final Random RANDOM = new Random();

    public static void main(String[] args) {
        int code = 0;
        try {
            String ns = args[0], workload = args[1], topic = args[2];
            int count = Integer.parseInt(args[3]), inflight = Integer.parseInt(args[4]), warmup = Integer.parseInt(args[5]);
            long limitMs = Long.parseLong(args[6]);
            int bodySize = Integer.parseInt(args[7]);
            byte[][] bodies = new byte[64][];
            for (int i = 0; i < bodies.length; i++) { bodies[i] = new byte[bodySize]; RANDOM.nextBytes(bodies[i]); }
            createTopic(ns, topic);
            String result = workload.equals("w2")
                ? consumeBacklog(ns, workload, topic, count, inflight, warmup, limitMs, bodies)
                : produce(ns, workload, topic, count, inflight, warmup, limitMs, bodies);
            System.out.println("RESULT " + result);
        } catch (Throwable t) {
            t.printStackTrace();
            System.out.println("ERROR " + VelaRemotingClient.json(String.valueOf(t)));
            code = 1;
        }
        System.out.flush();
        System.exit(code);
    }

    static long cpuUs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1000;
    }

    static void createTopic(String ns, String topic) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10_000);
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("cmpadmin" + System.nanoTime());
        admin.start();
        try {
            String addr = admin.examineBrokerClusterInfo().getBrokerAddrTable().values().iterator().next().selectBrokerAddr();
            admin.createAndUpdateTopicConfig(addr, new TopicConfig(topic, 8, 8, 6));
        } finally {
            admin.shutdown();
        }
    }

    static DefaultMQProducer producer(String ns) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("compare_producer_" + System.nanoTime());
        p.setNamesrvAddr(ns);
        p.setInstanceName("cmp" + System.nanoTime());
        p.setSendMsgTimeout(30_000);
        p.setMqClientApiTimeout(30_000);
        p.setRetryTimesWhenSendAsyncFailed(0);
        p.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE); // random bodies: compressing them is wasted work
        p.start();
        return p;
    }

    /** What one run of sends did. */
    static class Outcome {
        final AtomicInteger ok = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();
        final AtomicReference<String> firstError = new AtomicReference<>();
        double seconds;
        boolean timeLimited;
        long[] latencyNs;
        int latencies;
    }

    /** `count` async sends, `inflight` at a time; stops issuing at `limitMs`, then waits up to 10 s. */
    static Outcome sendLoop(DefaultMQProducer p, String topic, byte[][] bodies, int count, int inflight, long limitMs, boolean latency)
        throws InterruptedException {
        Outcome o = new Outcome();
        o.latencyNs = latency ? new long[count] : null;
        AtomicInteger slot = new AtomicInteger();
        Semaphore window = new Semaphore(inflight);
        long t0 = System.nanoTime();
        long deadline = t0 + TimeUnit.MILLISECONDS.toNanos(limitMs);
        int issued = 0;
        for (; issued < count; issued++) {
            if (System.nanoTime() >= deadline) { o.timeLimited = true; break; }
            window.acquire();
            long started = System.nanoTime();
            Message m = new Message(topic, "TagA", bodies[issued % bodies.length]);
            try {
                p.send(m, new SendCallback() {
                    public void onSuccess(SendResult r) {
                        if (o.latencyNs != null) o.latencyNs[slot.getAndIncrement()] = System.nanoTime() - started;
                        o.ok.incrementAndGet();
                        window.release();
                    }
                    public void onException(Throwable e) {
                        o.failed.incrementAndGet();
                        o.firstError.compareAndSet(null, String.valueOf(e));
                        window.release();
                    }
                });
            } catch (Exception e) {
                o.failed.incrementAndGet();
                o.firstError.compareAndSet(null, String.valueOf(e));
                window.release();
            }
        }
        if (!window.tryAcquire(inflight, 10, TimeUnit.SECONDS)) {
            int unanswered = issued - o.ok.get() - o.failed.get();
            o.failed.addAndGet(unanswered);
            o.firstError.compareAndSet(null, unanswered + " sends unanswered 10 s after the last was issued");
        }
        o.seconds = (System.nanoTime() - t0) / 1e9;
        o.latencies = Math.min(slot.get(), count);
        return o;
    }

    static String produce(String ns, String workload, String topic, int count, int inflight, int warmup, long limitMs, byte[][] bodies)
        throws Exception {
        DefaultMQProducer p = producer(ns);
        try {
            if (warmup > 0) sendLoop(p, topic, bodies, warmup, Math.min(inflight, 64), 30_000, false);
            System.out.println("BEGIN");
            System.out.flush();
            long cpu0 = cpuUs();
            Outcome o = sendLoop(p, topic, bodies, count, inflight, limitMs, true);
            System.out.println("END");
            System.out.flush();
            long clientCpuUs = cpuUs() - cpu0;
            StringBuilder sb = new StringBuilder("{");
            common(sb, workload, o.ok.get(), o.failed.get(), o.firstError.get(), o.seconds, o.timeLimited, clientCpuUs);
            if (o.latencies > 0) {
                double[] ms = new double[o.latencies];
                double sum = 0;
                for (int i = 0; i < ms.length; i++) { ms[i] = o.latencyNs[i] / 1e6; sum += ms[i]; }
                Arrays.sort(ms);
                sb.append(",\"latency\":{\"count\":").append(ms.length)
                    .append(",\"p50\":").append(percentile(ms, 50)).append(",\"p99\":").append(percentile(ms, 99))
                    .append(",\"max\":").append(ms[ms.length - 1]).append(",\"mean\":").append(sum / ms.length).append('}');
            }
            return sb.append('}').toString();
        } finally {
            p.shutdown();
        }
    }

    /** The nearest-rank percentile of ascending values (as bench/compare/stats.ts computes it). */
    static double percentile(double[] sorted, double p) {
        int rank = Math.max(1, (int) Math.ceil(p / 100 * sorted.length));
        return sorted[rank - 1];
    }

    static void common(StringBuilder sb, String workload, int ok, int failed, String firstError, double seconds, boolean timeLimited, long clientCpuUs) {
        sb.append("\"workload\":").append(VelaRemotingClient.json(workload))
            .append(",\"target\":\"vela-remoting\"")
            .append(",\"ok\":").append(ok).append(",\"failed\":").append(failed);
        if (firstError != null) sb.append(",\"firstError\":").append(VelaRemotingClient.json(firstError));
        sb.append(",\"seconds\":").append(seconds)
            .append(",\"rate\":").append(seconds > 0 ? ok / seconds : 0)
            .append(",\"timeLimited\":").append(timeLimited)
            .append(",\"clientCpuUs\":").append(clientCpuUs);
    }

    static String consumeBacklog(String ns, String workload, String topic, int count, int inflight, int warmup, long limitMs, byte[][] bodies)
        throws Exception {
        DefaultMQProducer p = producer(ns);
        Outcome fill;
        try {
            fill = sendLoop(p, topic, bodies, warmup + count, Math.max(inflight, 64), 180_000, false);
        } finally {
            p.shutdown();
        }
        if (fill.failed.get() > 0) throw new IllegalStateException("filling the backlog: " + fill.failed.get() + " sends failed (" + fill.firstError.get() + ")");
        int target = fill.ok.get();
        // The first `warm` messages consumed are the warm-up (untimed); the batch that crosses it begins the measured part.
        int warm = Math.max(0, Math.min(warmup, target - 1));
        AtomicInteger got = new AtomicInteger();
        long[] t0 = new long[1];
        long[] cpu0 = new long[1];
        CountDownLatch all = new CountDownLatch(1);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer("compare_push_" + System.nanoTime());
        c.setNamesrvAddr(ns);
        c.setInstanceName("cmpc" + System.nanoTime());
        c.setMqClientApiTimeout(30_000);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPullInterval(0);
        c.setConsumeThreadMin(4);
        c.setConsumeThreadMax(4);
        c.setPullBatchSize(32);
        c.setConsumeMessageBatchMaxSize(32);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            int before = got.getAndAdd(msgs.size());
            if (before <= warm && before + msgs.size() > warm) {
                synchronized (t0) {
                    System.out.println("BEGIN");
                    System.out.flush();
                    t0[0] = System.nanoTime();
                    cpu0[0] = cpuUs();
                }
            }
            if (before + msgs.size() >= target) all.countDown();
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long subscribed = System.nanoTime();
        c.start();
        boolean complete;
        double seconds;
        long clientCpuUs;
        int consumed;
        try {
            complete = all.await(Math.max(0, limitMs - (System.nanoTime() - subscribed) / 1_000_000), TimeUnit.MILLISECONDS);
            consumed = Math.min(got.get(), target) - warm;
            if (consumed <= 0) throw new IllegalStateException("nothing past the " + warm + " warm-up messages consumed within " + limitMs + " ms");
            VelaRemotingClient.commitSync(c);
            synchronized (t0) {
                seconds = (System.nanoTime() - t0[0]) / 1e9;
                System.out.println("END");
                System.out.flush();
                clientCpuUs = cpuUs() - cpu0[0];
            }
        } finally {
            c.shutdown();
        }
        StringBuilder sb = new StringBuilder("{");
        common(sb, workload, consumed, 0, null, seconds, !complete, clientCpuUs);
        return sb.append(",\"drained\":null}").toString();
    }
}
