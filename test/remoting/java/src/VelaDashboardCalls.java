import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.admin.ConsumeStats;
import org.apache.rocketmq.remoting.protocol.admin.OffsetWrapper;
import org.apache.rocketmq.remoting.protocol.admin.TopicStatsTable;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.body.Connection;
import org.apache.rocketmq.remoting.protocol.body.ConsumeMessageDirectlyResult;
import org.apache.rocketmq.remoting.protocol.body.ConsumerConnection;
import org.apache.rocketmq.remoting.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.remoting.protocol.body.ProducerConnection;
import org.apache.rocketmq.remoting.protocol.body.SubscriptionGroupWrapper;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * What the RocketMQ Dashboard (apache/rocketmq-dashboard, its service/impl classes) asks a cluster
 * for on its pages, made through the same DefaultMQAdminExt and DefaultMQPullConsumer calls, against
 * Vela. The Dashboard application itself is not run. Each call prints one "@@ {"event":"call",...}"
 * line with what the page would show; a failed call prints "ok":false and the error, and the run
 * goes on, so the Node test can say exactly which call failed.
 *
 *   VelaDashboardCalls NS TOPIC GROUP GRPC_GROUP CLIENT_ID MSG_ID KEY DLQ_MSG_ID
 *
 * GROUP has a running Java push consumer (CLIENT_ID); GRPC_GROUP has a gRPC consumer; MSG_ID is a
 * message of TOPIC with key KEY; DLQ_MSG_ID a dead letter of GROUP.
 */
public class VelaDashboardCalls {
    interface Call { Map<String, Object> run() throws Exception; }

    static void call(String name, Call c) {
        Map<String, Object> m;
        try {
            m = c.run();
            m.put("ok", true);
        } catch (Throwable t) {
            m = new TreeMap<>();
            m.put("ok", false);
            m.put("error", String.valueOf(t));
        }
        List<Object> kv = new ArrayList<>(List.of("name", name));
        for (Map.Entry<String, Object> e : m.entrySet()) { kv.add(e.getKey()); kv.add(e.getValue()); }
        VelaRemotingClient.out("call", kv.toArray());
    }

    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new TreeMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) m.put(String.valueOf(kv[i]), kv[i + 1]);
        return m;
    }

    static String csv(java.util.Collection<String> c) { return String.join(",", new TreeSet<>(c)); }

    public static void main(String[] args) throws Exception {
        String ns = args[0], topic = args[1], group = args[2], grpcGroup = args[3], clientId = args[4];
        String msgId = args[5], key = args[6], dlqMsgId = args[7];
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10_000);
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("dash" + System.nanoTime());
        admin.start();
        DefaultMQProducer producer = new DefaultMQProducer("PG_dash_" + System.nanoTime());
        producer.setNamesrvAddr(ns);
        producer.setInstanceName("dashp" + System.nanoTime());
        producer.setSendMsgTimeout(10_000);
        producer.start();
        DefaultMQPullConsumer pull = new DefaultMQPullConsumer("TOOLS_CONSUMER");
        pull.setNamesrvAddr(ns);
        pull.setInstanceName("dashc" + System.nanoTime());
        pull.start();
        try {
            ClusterInfo cluster = admin.examineBrokerClusterInfo();
            String addr = cluster.getBrokerAddrTable().values().iterator().next().selectBrokerAddr();

            // Cluster page (ClusterServiceImpl): cluster info, each broker's runtime figures and config.
            call("examineBrokerClusterInfo", () -> map("clusters", csv(cluster.getClusterAddrTable().keySet()),
                "brokers", csv(cluster.getBrokerAddrTable().keySet()), "addr", addr));
            call("fetchBrokerRuntimeStats", () -> {
                Map<String, String> t = admin.fetchBrokerRuntimeStats(addr).getTable();
                return map("keys", t.size(), "msgPutTotalTodayNow", t.get("msgPutTotalTodayNow"), "brokerVersionDesc", t.get("brokerVersionDesc"));
            });
            call("getBrokerConfig", () -> map("brokerName", admin.getBrokerConfig(addr).getProperty("brokerName")));

            // Topic page (TopicServiceImpl): list, configs (message type), status, route, consumers, config.
            call("fetchAllTopicList", () -> {
                Set<String> all = admin.fetchAllTopicList().getTopicList();
                return map("hasTopic", all.contains(topic), "hasRetry", all.contains("%RETRY%" + group),
                    "hasGrpcRetry", all.contains("%RETRY%" + grpcGroup), "hasDlq", all.contains("%DLQ%" + group));
            });
            call("getAllTopicConfig", () -> {
                TopicConfigSerializeWrapper w = admin.getAllTopicConfig(addr, 10_000);
                TopicConfig t = w.getTopicConfigTable().get(topic);
                return map("queues", t.getWriteQueueNums(), "messageType", t.getAttributes().get("message.type"));
            });
            call("examineTopicStats", () -> {
                TopicStatsTable s = admin.examineTopicStats(topic);
                long max = 0;
                for (var e : s.getOffsetTable().values()) max += e.getMaxOffset();
                return map("queues", s.getOffsetTable().size(), "messages", max);
            });
            call("examineTopicRouteInfo", () -> {
                TopicRouteData r = admin.examineTopicRouteInfo(topic);
                return map("brokerAddr", r.getBrokerDatas().get(0).selectBrokerAddr(), "readQueueNums", r.getQueueDatas().get(0).getReadQueueNums());
            });
            call("queryTopicConsumeByWho", () -> map("groups", csv(admin.queryTopicConsumeByWho(topic).getGroupList())));
            call("examineTopicConfig", () -> map("topicName", admin.examineTopicConfig(addr, topic).getTopicName()));
            call("createAndUpdateTopicConfig+deleteTopic", () -> {
                String t = topic + "_dash";
                TopicConfig c = new TopicConfig(t, 2, 2, 6);
                c.getAttributes().put("+message.type", "FIFO");
                admin.createAndUpdateTopicConfig(addr, c);
                String type = admin.examineTopicConfig(addr, t).getAttributes().get("message.type");
                admin.deleteTopicInBroker(Collections.singleton(addr), t);
                admin.deleteTopicInNameServer(Collections.singleton(ns), t);
                boolean gone = !admin.fetchAllTopicList().getTopicList().contains(t);
                return map("createdType", type, "deleted", gone);
            });

            // Consumer page (ConsumerServiceImpl): the group list, each group's progress and
            // connections, a client's running info, the group's config.
            call("getAllSubscriptionGroup", () -> {
                SubscriptionGroupWrapper w = admin.getAllSubscriptionGroup(addr, 30_000);
                return map("hasGroup", w.getSubscriptionGroupTable().containsKey(group),
                    "hasGrpcGroup", w.getSubscriptionGroupTable().containsKey(grpcGroup));
            });
            for (String g : new String[] {group, grpcGroup}) {
                String which = g.equals(group) ? "remoting" : "grpc";
                call("examineConsumeStats:" + which, () -> {
                    ConsumeStats s = admin.examineConsumeStats(g);
                    long consumed = 0;
                    for (Map.Entry<MessageQueue, OffsetWrapper> e : s.getOffsetTable().entrySet())
                        if (e.getKey().getTopic().equals(topic)) consumed += e.getValue().getConsumerOffset();
                    return map("diffTotal", s.computeTotalDiff(), "consumerOffsets", consumed);
                });
                call("examineConsumerConnectionInfo:" + which, () -> {
                    ConsumerConnection c = admin.examineConsumerConnectionInfo(g);
                    List<String> ids = new ArrayList<>();
                    for (Connection conn : c.getConnectionSet()) ids.add(conn.getClientId());
                    return map("clients", csv(ids), "consumeType", String.valueOf(c.getConsumeType()),
                        "messageModel", String.valueOf(c.getMessageModel()));
                });
            }
            call("examineConsumeStats(addr,group,null,3000)", () ->
                map("queues", admin.examineConsumeStats(addr, group, null, 3000).getOffsetTable().size()));
            call("getConsumerRunningInfo", () -> {
                ConsumerRunningInfo info = admin.getConsumerRunningInfo(group, clientId, false);
                List<String> topics = new ArrayList<>();
                for (var s : info.getSubscriptionSet()) topics.add(s.getTopic());
                return map("subscriptions", csv(topics), "consumeType", info.getProperties().getProperty("PROP_CONSUME_TYPE"),
                    "queues", info.getMqTable().size());
            });
            call("examineSubscriptionGroupConfig", () -> {
                SubscriptionGroupConfig c = admin.examineSubscriptionGroupConfig(addr, group);
                return map("groupName", c.getGroupName(), "retryMaxTimes", c.getRetryMaxTimes());
            });

            // Producer page (ProducerServiceImpl): a producer group's connections.
            call("examineProducerConnectionInfo", () -> {
                producer.send(new Message(topic, "TagD", "from the dashboard program".getBytes(StandardCharsets.UTF_8)));
                producer.getDefaultMQProducerImpl().getMqClientFactory().sendHeartbeatToAllBrokerWithLock();
                ProducerConnection c = admin.examineProducerConnectionInfo(producer.getProducerGroup(), topic);
                return map("connections", c.getConnectionSet().size());
            });

            // Message page (MessageServiceImpl): by id, by key, by topic and time (a pull consumer).
            call("viewMessage", () -> {
                MessageExt m = admin.viewMessage(topic, msgId);
                return map("body", new String(m.getBody(), StandardCharsets.UTF_8), "keys", m.getKeys());
            });
            call("queryMessage", () -> {
                List<MessageExt> found = admin.queryMessage(topic, key, 64, 0, System.currentTimeMillis()).getMessageList();
                return map("found", found.size(), "msgId", found.isEmpty() ? null : found.get(0).getMsgId());
            });
            call("queryMessageByTopic", () -> {
                long end = System.currentTimeMillis() + 1000, begin = end - 3_600_000;
                int n = 0;
                for (MessageQueue mq : pull.fetchSubscribeMessageQueues(topic)) {
                    long min = pull.searchOffset(mq, begin), max = pull.searchOffset(mq, end);
                    for (long offset = min; offset < max; ) {
                        PullResult r = pull.pull(mq, "*", offset, 32);
                        if (r.getPullStatus() != PullStatus.FOUND) break;
                        n += r.getMsgFoundList().size();
                        offset = r.getNextBeginOffset();
                    }
                }
                return map("messages", n);
            });

            // DLQ page (DlqMessageServiceImpl): the DLQ topic's route and messages, resend to a consumer.
            String dlq = "%DLQ%" + group;
            call("dlqRoute", () -> map("queues", admin.examineTopicRouteInfo(dlq).getQueueDatas().get(0).getReadQueueNums()));
            call("dlqMessages", () -> {
                int n = 0;
                for (MessageQueue mq : pull.fetchSubscribeMessageQueues(dlq)) {
                    PullResult r = pull.pull(mq, "*", 0, 32);
                    if (r.getPullStatus() == PullStatus.FOUND) n += r.getMsgFoundList().size();
                }
                return map("messages", n);
            });
            call("dlqResend", () -> {
                ConsumeMessageDirectlyResult r = admin.consumeMessageDirectly(group, clientId, dlq, dlqMsgId);
                return map("consumeResult", String.valueOf(r.getConsumeResult()));
            });

            // Consumer page: reset the group's offsets to a time (here: now, the end of each queue).
            call("resetOffsetByTimestamp", () -> {
                Map<MessageQueue, Long> r = admin.resetOffsetByTimestamp(topic, group, System.currentTimeMillis() + 1000, true);
                long total = 0;
                for (long v : r.values()) total += v;
                return map("queues", r.size(), "offsets", total);
            });
        } finally {
            pull.shutdown();
            producer.shutdown();
            admin.shutdown();
        }
        VelaRemotingClient.out("done", "ok", "true");
        System.exit(0);
    }
}
