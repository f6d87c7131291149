/** The dispatch table: request code → processor. Codes not listed are answered REQUEST_CODE_NOT_SUPPORTED. */
import { RequestCode } from '../codes.js';
import type { Processor } from '../context.js';
import { getBrokerClusterInfo, getRouteInfoByTopic } from './route.js';
import { consumerSendMsgBack, sendBatchMessage, sendMessage } from './send.js';
import { pullMessage } from './pull.js';
import { endTransaction } from './transaction.js';
import { consumeMessageDirectly, getConsumerRunningInfo } from './call-consumer.js';
import {
  getMaxOffset,
  getMinOffset,
  queryConsumerOffset,
  searchOffsetByTimestamp,
  updateConsumerOffset,
} from './offset.js';
import {
  checkClientConfig,
  getConsumerListByGroup,
  heartbeat,
  lockBatchMq,
  unlockBatchMq,
  unregisterClient,
} from './client.js';

import {
  getAllSubscriptionGroupConfig,
  getAllTopicConfig,
  getAllTopicList,
  getBrokerConfig,
  getBrokerRuntimeInfo,
  getConsumeStats,
  getConsumerConnectionList,
  getProducerConnectionList,
  getSystemTopicList,
  getTopicConfig,
  getTopicStatsInfo,
  invokeBrokerToResetOffset,
  queryMessage,
  queryTopicConsumeByWho,
  updateAndCreateSubscriptionGroup,
  updateAndCreateTopic,
  viewMessageById,
  deleteTopic,
  deleteSubscriptionGroup,
  viewBrokerStatsData,
} from './admin.js';

export function processors(): ReadonlyMap<number, Processor> {
  const R = RequestCode;
  return new Map<number, Processor>([
    // name server
    [R.GET_ROUTEINFO_BY_TOPIC, getRouteInfoByTopic],
    [R.GET_BROKER_CLUSTER_INFO, getBrokerClusterInfo],
    // producers
    [R.SEND_MESSAGE, sendMessage(false)],
    [R.SEND_MESSAGE_V2, sendMessage(true)],
    [R.SEND_BATCH_MESSAGE, sendBatchMessage],
    [R.END_TRANSACTION, endTransaction],
    // consumers
    [R.PULL_MESSAGE, pullMessage],
    [R.LITE_PULL_MESSAGE, pullMessage],
    [R.CONSUMER_SEND_MSG_BACK, consumerSendMsgBack],
    [R.QUERY_CONSUMER_OFFSET, queryConsumerOffset],
    [R.UPDATE_CONSUMER_OFFSET, updateConsumerOffset],
    [R.GET_MAX_OFFSET, getMaxOffset],
    [R.GET_MIN_OFFSET, getMinOffset],
    [R.SEARCH_OFFSET_BY_TIMESTAMP, searchOffsetByTimestamp],
    // clients
    [R.HEART_BEAT, heartbeat],
    [R.UNREGISTER_CLIENT, unregisterClient],
    [R.GET_CONSUMER_LIST_BY_GROUP, getConsumerListByGroup],
    [R.LOCK_BATCH_MQ, lockBatchMq],
    [R.UNLOCK_BATCH_MQ, unlockBatchMq],
    [R.CHECK_CLIENT_CONFIG, checkClientConfig],
    // mqadmin
    [R.UPDATE_AND_CREATE_TOPIC, updateAndCreateTopic],
    [R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, updateAndCreateSubscriptionGroup],
    [R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, getAllTopicList],
    [R.QUERY_TOPIC_CONSUME_BY_WHO, queryTopicConsumeByWho],
    [R.GET_TOPIC_STATS_INFO, getTopicStatsInfo],
    [R.GET_TOPIC_CONFIG, getTopicConfig],
    [R.GET_CONSUME_STATS, getConsumeStats],
    [R.GET_CONSUMER_CONNECTION_LIST, getConsumerConnectionList],
    [R.INVOKE_BROKER_TO_RESET_OFFSET, invokeBrokerToResetOffset],
    [R.VIEW_MESSAGE_BY_ID, viewMessageById],
    [R.QUERY_MESSAGE, queryMessage],
    [R.GET_BROKER_RUNTIME_INFO, getBrokerRuntimeInfo],
    [R.GET_CONSUMER_RUNNING_INFO, getConsumerRunningInfo],
    [R.CONSUME_MESSAGE_DIRECTLY, consumeMessageDirectly],
    // Dashboard
    [R.GET_SYSTEM_TOPIC_LIST_FROM_NS, getSystemTopicList],
    [R.GET_ALL_TOPIC_CONFIG, getAllTopicConfig],
    [R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, getAllSubscriptionGroupConfig],
    [R.GET_PRODUCER_CONNECTION_LIST, getProducerConnectionList],
    [R.GET_BROKER_CONFIG, getBrokerConfig],
    [R.VIEW_BROKER_STATS_DATA, viewBrokerStatsData],
    [R.DELETE_TOPIC_IN_BROKER, deleteTopic],
    [R.DELETE_TOPIC_IN_NAMESRV, deleteTopic],
    [R.DELETE_SUBSCRIPTIONGROUP, deleteSubscriptionGroup],
  ]);
}
