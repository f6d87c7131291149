/**
 * `vela admin` message, dead-letter and broker commands, with mqadmin's names and flags: queryMsgById,
 * queryMsgByKey, queryDlqMsg, resendDlqMsg, brokerStatus.
 */
import { CliError } from '../../common/cli-error.js';
import type { CommonOptions, SubCommand } from './commands.js';
import { parseInteger } from './arguments.js';
import { formatJson } from './table.js';
import {
  renderBrokerStatus,
  renderMessageList,
  renderMessages,
  type BrokerInfo,
  type MessageViews,
} from './render.js';

const out = (text: string) => void process.stdout.write(text);
const seg = (name: string) => encodeURIComponent(name);

export function registerMessageCommands(sub: SubCommand): void {
  // ---- messages -------------------------------------------------------------------------------------

  sub<CommonOptions & { msgId: string; topic?: string }>(
    'queryMsgById',
    'show a message by its message ID',
    (cmd) =>
      cmd
        .requiredOption('-i, --msgId <id>', 'message ID')
        .option('-t, --topic <topic>', 'the topic (narrows the search)'),
    async (client, o) => {
      const messages = await client.get<MessageViews>(`/api/messages/${seg(o.msgId)}`, { topic: o.topic });
      if (messages.length === 0) {
        throw new CliError(`no message with ID ${o.msgId}${o.topic ? ` in topic ${o.topic}` : ''}`);
      }
      out(o.json ? formatJson(messages) : renderMessages(messages));
    },
  );

  sub<CommonOptions & { msgKey: string; topic: string; maxNum?: number }>(
    'queryMsgByKey',
    'list the messages of a topic that carry a key',
    (cmd) =>
      cmd
        .requiredOption('-k, --msgKey <key>', 'message key')
        .requiredOption('-t, --topic <topic>', 'topic name')
        .option('-c, --maxNum <n>', 'at most this many messages (default 32)', parseInteger),
    async (client, o) => {
      const messages = await client.get<MessageViews>('/api/messages', {
        key: o.msgKey,
        topic: o.topic,
        limit: o.maxNum,
      });
      out(o.json ? formatJson(messages) : renderMessageList(messages));
    },
  );

  // ---- dead-letter queues -------------------------------------------------------------------------

  sub<CommonOptions & { consumerGroup: string; offset?: number; maxNum?: number }>(
    'queryDlqMsg',
    "list the messages in a consumer group's dead-letter queue (%DLQ%<group>)",
    (cmd) =>
      cmd
        .requiredOption('-g, --consumerGroup <group>', 'consumer group')
        .option('-o, --offset <n>', 'start at this DLQ offset (default: the oldest)', parseInteger)
        .option('-c, --maxNum <n>', 'at most this many messages (default 32)', parseInteger),
    async (client, o) => {
      const page = await client.get<{ messages: MessageViews; nextOffset: number; maxOffset: number }>(
        `/api/groups/${encodeURIComponent(o.consumerGroup)}/dlq`,
        { offset: o.offset, limit: o.maxNum },
      );
      out(
        o.json
          ? formatJson(page)
          : `${renderMessageList(page.messages)}\nnext offset ${page.nextOffset} of ${page.maxOffset}`,
      );
    },
  );

  sub<CommonOptions & { consumerGroup: string; msgId?: string }>(
    'resendDlqMsg',
    'send dead letters back to their consumer group (one by message id, or all)',
    (cmd) =>
      cmd
        .requiredOption('-g, --consumerGroup <group>', 'consumer group')
        .option('-i, --msgId <id>', 'only this message (default: every dead letter)'),
    async (client, o) => {
      const r = await client.post<{ resent: number }>(
        `/api/groups/${encodeURIComponent(o.consumerGroup)}/dlq/resend`,
        {
          ...(o.msgId ? { messageId: o.msgId } : {}),
        },
      );
      out(o.json ? formatJson(r) : `resent ${r.resent} message(s) to ${o.consumerGroup}`);
    },
  );

  // ---- broker ---------------------------------------------------------------------------------------

  sub<CommonOptions>(
    'brokerStatus',
    'broker name, counts of topics, groups and clients, and storage figures',
    (cmd) => cmd.option('-b, --brokerAddr <addr>', 'accepted and ignored (one broker)'),
    async (client, o) => {
      const info = await client.get<BrokerInfo>('/api/broker');
      out(o.json ? formatJson(info) : renderBrokerStatus(info));
    },
  );
}
