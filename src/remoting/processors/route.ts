/**
 * Name-server requests: a topic's route (GET_ROUTEINFO_BY_TOPIC) and the cluster (GET_BROKER_CLUSTER_INFO).
 * There is one broker, this process, at the endpoint's own address.
 *
 * Topics are created explicitly; a group's retry topic `%RETRY%<group>` appears when the group exists
 * (consumers subscribe to it on their own). With auto-creation on, an unknown topic is created at its
 * first route query, and the producers' `TBW102` template route is served.
 */
import type { TopicConfig } from '../../broker/metadata.js';
import { groupOfRetryTopic } from '../../broker/send-back.js';
import { ResponseCode } from '../codes.js';
import type { RequestContext, Reply } from '../context.js';
import { jsonBody } from '../fastjson.js';

/** The auto-create template producers fall back to (RocketMQ's `TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`). */
export const AUTO_CREATE_TOPIC = 'TBW102';

/** The topic's config, creating it where RocketMQ would (retry topics; auto-creation). */
export async function resolveTopic(ctx: RequestContext, topic: string): Promise<TopicConfig | undefined> {
  const b = ctx.broker;
  const t = b.topics.get(topic);
  if (t) return t;
  const group = groupOfRetryTopic(topic);
  if (group !== undefined && (b.groups.get(group) || b.config.autoCreateGroups)) {
    try {
      await b.consume.requireGroup(group);
    } catch {
      return undefined; // not a legal group name
    }
    return b.sendBack.ensureRetryTopic(group);
  }
  if (ctx.endpoint.autoCreateTopics) {
    if (topic === AUTO_CREATE_TOPIC) {
      return {
        name: topic,
        readQueueNums: 8,
        writeQueueNums: 8,
        perm: 7,
        messageType: 'NORMAL',
        attributes: {},
      };
    }
    try {
      return await b.topics.upsert(topic, {});
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export function routeData(ctx: RequestContext, topics: readonly TopicConfig[]): unknown {
  const brokerName = ctx.broker.brokerName;
  return {
    brokerDatas: [
      {
        brokerAddrs: { '0': ctx.endpoint.address },
        brokerName,
        cluster: ctx.endpoint.clusterName,
        enableActingMaster: false,
      },
    ],
    filterServerTable: {},
    queueDatas: topics.map((t) => ({
      brokerName,
      perm: t.perm,
      readQueueNums: t.readQueueNums,
      topicSysFlag: 0,
      writeQueueNums: t.writeQueueNums,
    })),
  };
}

export async function getRouteInfoByTopic(ctx: RequestContext): Promise<Reply> {
  const topic = ctx.header.str('topic');
  const t = await resolveTopic(ctx, topic);
  if (!t) {
    return {
      code: ResponseCode.TOPIC_NOT_EXIST,
      remark: `No topic route info in name server for the topic: ${topic}`,
    };
  }
  return { body: jsonBody(routeData(ctx, [t])) };
}

export function getBrokerClusterInfo(ctx: RequestContext): Reply {
  const name = ctx.broker.brokerName;
  const cluster = ctx.endpoint.clusterName;
  return {
    body: jsonBody({
      brokerAddrTable: {
        [name]: {
          brokerAddrs: { '0': ctx.endpoint.address },
          brokerName: name,
          cluster,
          enableActingMaster: false,
        },
      },
      clusterAddrTable: { [cluster]: [name] },
    }),
  };
}
