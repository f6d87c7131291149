/**
 * `vela admin <command>`: mqadmin's commands, with mqadmin's names and flags, on top of the admin
 * HTTP API. `-n` is the admin HTTP address (mqadmin's name-server flag: with Vela the broker is its own
 * name server); `--json` prints the API's answer instead of the table. Cluster and broker flags
 * (`-c`, `-b`) are accepted and ignored: there is one broker. With access control on, a super user's
 * keys (`--access-key`/`--secret-key`, or VELA_ACCESS_KEY/VELA_SECRET_KEY) sign every request.
 *
 * This file registers the topic, group, offset and broker commands, one short block each (flags,
 * one API call, one renderer); message commands are in message-commands.ts, ACL commands in
 * acl-commands.ts, parsing in arguments.ts, tables in render.ts.
 */
import { Option, type Command } from 'commander';
import type { GroupView, TopicView } from '../operations.js';
import { usageError } from '../../common/cli-error.js';
import { AdminClient, DEFAULT_ADMIN_ADDR } from './admin-client.js';
import { registerAclCommands } from './acl-commands.js';
import { registerMessageCommands } from './message-commands.js';
import {
  parseAttributes,
  parseBoolean,
  parseInteger,
  parseResetTime,
  parseRetryPolicyJson,
} from './arguments.js';
import { formatJson, formatTable } from './table.js';
import {
  renderConsumerConnection,
  renderConsumerProgress,
  renderGroupConfig,
  renderGroupList,
  renderTopicConfig,
  renderTopicList,
  renderTopicRouteTable,
  renderTopicStatus,
  renderTimerStatus,
  renderTransactionStatus,
  type TimerStatus,
  type TransactionStatus,
  type ConsumerConnections,
  type ConsumerProgress,
  type TopicRoute,
  type TopicStatus,
} from './render.js';

/** Options every admin command takes. */
export interface CommonOptions {
  namesrvAddr?: string;
  token?: string;
  json?: boolean;
  accessKey?: string;
  secretKey?: string;
}

/** Adds one subcommand: its options, then an action that gets a client and the parsed options. */
export type SubCommand = <O extends CommonOptions>(
  name: string,
  description: string,
  configure: (cmd: Command) => Command,
  action: (client: AdminClient, opts: O) => Promise<void>,
) => void;

const out = (text: string) => void process.stdout.write(text);
const seg = (name: string) => encodeURIComponent(name);

/** The admin command, with every mqadmin subcommand, added to `program`. */
export function registerAdminCommands(program: Command): Command {
  const admin = program
    .command('admin')
    .description('mqadmin-compatible administration over the broker admin HTTP API')
    .addHelpText(
      'after',
      `\nEvery command takes -n <host:port> (the admin HTTP address; default ${DEFAULT_ADMIN_ADDR} or ` +
        'VELA_ADMIN_ADDR), --token <token> (the admin token, default VELA_ADMIN_TOKEN) and --json ' +
        '(print the raw JSON answer); with access control on, a super ' +
        "user's --access-key and --secret-key (better: VELA_ACCESS_KEY and VELA_SECRET_KEY).\n" +
        'Exit codes: 0 success, 1 the server refused or could not be reached, 2 usage error.',
    );

  /** A subcommand with the common options, whose action gets a client and the parsed options. */
  const sub: SubCommand = <O extends CommonOptions>(
    name: string,
    description: string,
    configure: (cmd: Command) => Command,
    action: (client: AdminClient, opts: O) => Promise<void>,
  ): void => {
    const cmd = admin.command(name).description(description);
    configure(cmd);
    cmd
      .addOption(
        new Option('-n, --namesrvAddr <host:port>', 'admin HTTP address of the broker')
          .env('VELA_ADMIN_ADDR')
          .default(DEFAULT_ADMIN_ADDR),
      )
      .addOption(
        new Option('--token <token>', "the broker's admin token, when it has one").env('VELA_ADMIN_TOKEN'),
      )
      .option('--json', 'print the raw JSON answer')
      .addOption(
        new Option('--access-key <key>', 'access key of a super user (access control on)').env(
          'VELA_ACCESS_KEY',
        ),
      )
      .addOption(
        new Option('--secret-key <key>', 'its secret key (prefer the environment variable)').env(
          'VELA_SECRET_KEY',
        ),
      )
      .action(async (opts: O) => {
        if (!opts.accessKey !== !opts.secretKey) {
          throw usageError('--access-key and --secret-key (VELA_ACCESS_KEY, VELA_SECRET_KEY) go together');
        }
        const credentials =
          opts.accessKey && opts.secretKey
            ? { accessKey: opts.accessKey, secretKey: opts.secretKey }
            : undefined;
        await action(new AdminClient(opts.namesrvAddr ?? DEFAULT_ADMIN_ADDR, opts.token, credentials), opts);
      });
  };

  const ignored = (cmd: Command, ...flags: string[]) => {
    for (const f of flags)
      cmd.addOption(new Option(f, 'accepted for mqadmin compatibility; ignored').hideHelp());
    return cmd;
  };

  // ---- topics ---------------------------------------------------------------------------------------

  sub<
    CommonOptions & {
      topic: string;
      readQueueNums?: number;
      writeQueueNums?: number;
      perm?: number;
      attributes?: Record<string, string>;
    }
  >(
    'updateTopic',
    'create or update a topic',
    (cmd) =>
      ignored(
        cmd
          .requiredOption('-t, --topic <topic>', 'topic name')
          .option('-r, --readQueueNums <n>', 'read queue count (default 8 for a new topic)', parseInteger)
          .option('-w, --writeQueueNums <n>', 'write queue count (default 8 for a new topic)', parseInteger)
          .option('-p, --perm <perm>', 'permission: 2 write, 4 read, 6 read+write (default 6)', parseInteger)
          .option(
            '-a, --attributes <+key=value,…>',
            'attributes, e.g. +message.type=FIFO (NORMAL, FIFO, DELAY, TRANSACTION)',
            parseAttributes,
          )
          .option('-o, --order <true|false>', 'accepted and ignored: use -a +message.type=FIFO', parseBoolean)
          .option('-c, --clusterName <cluster>', 'accepted and ignored (one broker)')
          .option('-b, --brokerAddr <addr>', 'accepted and ignored (one broker)'),
        '-u, --unit <bool>',
        '-s, --hasUnitSub <bool>',
      ),
    async (client, o) => {
      const topic = await client.post<TopicView>('/api/topics', {
        topic: o.topic,
        readQueueNums: o.readQueueNums,
        writeQueueNums: o.writeQueueNums,
        perm: o.perm,
        attributes: o.attributes,
      });
      out(
        o.json
          ? formatJson(topic)
          : `create topic to ${client.baseUrl} success.\n${renderTopicConfig(topic)}`,
      );
    },
  );

  sub<CommonOptions & { topic: string }>(
    'deleteTopic',
    'delete a topic (and its messages from the consumers’ view)',
    (cmd) =>
      cmd
        .requiredOption('-t, --topic <topic>', 'topic name')
        .option('-c, --clusterName <cluster>', 'accepted and ignored (one broker)'),
    async (client, o) => {
      const res = await client.delete<{ deleted: string }>(`/api/topics/${seg(o.topic)}`);
      out(o.json ? formatJson(res) : `delete topic [${o.topic}] from broker [${client.baseUrl}] success.\n`);
    },
  );

  sub<CommonOptions>(
    'topicList',
    'list topics with their message type, queues and permission',
    (cmd) => cmd.option('-c, --clusterModel', 'accepted and ignored (one broker)'),
    async (client, o) => {
      const topics = await client.get<TopicView[]>('/api/topics');
      out(o.json ? formatJson(topics) : renderTopicList(topics));
    },
  );

  sub<CommonOptions & { topic: string }>(
    'topicStatus',
    'min/max offset and last update of each queue of a topic',
    (cmd) => cmd.requiredOption('-t, --topic <topic>', 'topic name'),
    async (client, o) => {
      const status = await client.get<TopicStatus>(`/api/topics/${seg(o.topic)}/status`);
      out(o.json ? formatJson(status) : renderTopicStatus(status));
    },
  );

  sub<CommonOptions & { topic: string; list?: boolean }>(
    'topicRoute',
    'the route clients get for a topic (JSON, as mqadmin prints it; -l for a table)',
    (cmd) =>
      cmd
        .requiredOption('-t, --topic <topic>', 'topic name')
        .option('-l, --list', 'print a table instead of JSON'),
    async (client, o) => {
      const route = await client.get<TopicRoute>(`/api/topics/${seg(o.topic)}/route`);
      out(o.list && !o.json ? renderTopicRouteTable(route) : formatJson(route));
    },
  );

  sub<CommonOptions & { topic?: string }>(
    'timerStatus',
    'delay messages waiting for their delivery time, per topic, and when the next is due',
    (cmd) => cmd.option('-t, --topic <topic>', 'only this topic'),
    async (client, o) => {
      const q = o.topic ? `?topic=${seg(o.topic)}` : '';
      const status = await client.get<TimerStatus>(`/api/timer${q}`);
      out(o.json ? formatJson(status) : renderTimerStatus(status));
    },
  );

  sub<CommonOptions & { topic?: string }>(
    'transactionStatus',
    'transactions neither committed nor rolled back (half messages), per topic',
    (cmd) => cmd.option('-t, --topic <topic>', 'only this topic'),
    async (client, o) => {
      const q = o.topic ? `?topic=${seg(o.topic)}` : '';
      const status = await client.get<TransactionStatus>(`/api/transactions${q}`);
      out(o.json ? formatJson(status) : renderTransactionStatus(status));
    },
  );

  // ---- consumer groups ------------------------------------------------------------------------------

  sub<
    CommonOptions & {
      groupName: string;
      retryMaxTimes?: number;
      consumeMessageOrderly?: boolean;
      consumeBroadcastEnable?: boolean;
      consumeEnable?: boolean;
      groupRetryPolicy?: Record<string, unknown>;
      fifoRetryIntervalMs?: number;
    }
  >(
    'updateSubGroup',
    'create or update a consumer group',
    (cmd) =>
      ignored(
        cmd
          .requiredOption('-g, --groupName <group>', 'consumer group name')
          .option('-r, --retryMaxTimes <n>', 'retries before the DLQ (default 16)', parseInteger)
          .option(
            '-o, --consumeMessageOrderly <true|false>',
            'FIFO consumption (default false)',
            parseBoolean,
          )
          .option(
            '-d, --consumeBroadcastEnable <true|false>',
            'allow broadcast consumption (default true)',
            parseBoolean,
          )
          .option('-s, --consumeEnable <true|false>', 'allow consumption (default true)', parseBoolean)
          .option(
            '-p, --groupRetryPolicy <json>',
            'retry policy, e.g. {"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":2}}',
            parseRetryPolicyJson,
          )
          .option(
            '--fifoRetryIntervalMs <ms>',
            'retry interval of FIFO consumption (default 1000)',
            parseInteger,
          )
          .option('-c, --clusterName <cluster>', 'accepted and ignored (one broker)')
          .option('-b, --brokerAddr <addr>', 'accepted and ignored (one broker)'),
        '-m, --consumeFromMinEnable <bool>',
        '-q, --retryQueueNums <n>',
        '-i, --brokerId <id>',
        '-w, --whichBrokerWhenConsumeSlowly <id>',
        '-a, --notifyConsumerIdsChanged <bool>',
      ),
    async (client, o) => {
      const group = await client.post<GroupView>('/api/groups', {
        group: o.groupName,
        retryMaxTimes: o.retryMaxTimes,
        consumeMessageOrderly: o.consumeMessageOrderly,
        consumeBroadcastEnable: o.consumeBroadcastEnable,
        consumeEnable: o.consumeEnable,
        groupRetryPolicy: o.groupRetryPolicy,
        fifoRetryIntervalMs: o.fifoRetryIntervalMs,
      });
      out(
        o.json
          ? formatJson(group)
          : `create subscription group to ${client.baseUrl} success.\n${renderGroupConfig(group)}`,
      );
    },
  );

  sub<CommonOptions & { groupName: string }>(
    'deleteSubGroup',
    'delete a consumer group',
    (cmd) =>
      ignored(
        cmd
          .requiredOption('-g, --groupName <group>', 'consumer group name')
          .option('-c, --clusterName <cluster>', 'accepted and ignored (one broker)')
          .option('-b, --brokerAddr <addr>', 'accepted and ignored (one broker)'),
        '-r, --removeOffset <bool>',
      ),
    async (client, o) => {
      const res = await client.delete<{ deleted: string }>(`/api/groups/${seg(o.groupName)}`);
      out(
        o.json
          ? formatJson(res)
          : `delete subscription group [${o.groupName}] from broker [${client.baseUrl}] success.\n`,
      );
    },
  );

  sub<CommonOptions>(
    'groupList',
    'list consumer groups with their settings (Vela; mqadmin has no equivalent)',
    (cmd) => cmd,
    async (client, o) => {
      const groups = await client.get<GroupView[]>('/api/groups');
      out(o.json ? formatJson(groups) : renderGroupList(groups));
    },
  );

  sub<CommonOptions & { groupName: string; topic?: string }>(
    'consumerProgress',
    'per queue: broker offset, consumer offset, in-flight messages and lag of a consumer group',
    (cmd) =>
      cmd
        .requiredOption('-g, --groupName <group>', 'consumer group name')
        .option('-t, --topic <topic>', 'only this topic'),
    async (client, o) => {
      const progress = await client.get<ConsumerProgress>(`/api/groups/${seg(o.groupName)}/progress`, {
        topic: o.topic,
      });
      out(o.json ? formatJson(progress) : renderConsumerProgress(progress));
    },
  );

  type ResetOptions = CommonOptions & { group: string; topic: string; queue?: number };
  const renderReset = (r: {
    topic: string;
    queues: { queueId: number; oldOffset: number | null; newOffset: number }[];
  }) =>
    formatTable(
      ['#Topic', '#QID', '#Old Offset', '#New Offset'],
      r.queues.map((q) => [r.topic, q.queueId, q.oldOffset ?? '-', q.newOffset]),
    );

  sub<ResetOptions & { timestamp: number }>(
    'resetOffsetByTime',
    'move a consumer group back or forward to the first message stored at or after a time',
    (cmd) =>
      cmd
        .requiredOption('-g, --group <group>', 'consumer group name')
        .requiredOption('-t, --topic <topic>', 'topic name')
        .requiredOption(
          '-s, --timestamp <time>',
          'now, epoch milliseconds or yyyy-MM-dd#HH:mm:ss:SSS',
          parseResetTime,
        )
        .option('-q, --queue <id>', 'only this queue', parseInteger)
        .option('-f, --force <bool>', 'accepted and ignored (resets always apply)')
        .option('-c, --cluster <name>', 'accepted and ignored (one broker)'),
    async (client, o) => {
      const r = await client.post<Parameters<typeof renderReset>[0]>(
        `/api/groups/${seg(o.group)}/reset-offset`,
        {
          topic: o.topic,
          timestamp: o.timestamp,
          ...(o.queue !== undefined ? { queueId: o.queue } : {}),
        },
      );
      out(o.json ? formatJson(r) : renderReset(r));
    },
  );

  sub<ResetOptions & { offset: number }>(
    'resetOffset',
    'move a consumer group to an explicit offset (clamped to what is stored)',
    (cmd) =>
      cmd
        .requiredOption('-g, --group <group>', 'consumer group name')
        .requiredOption('-t, --topic <topic>', 'topic name')
        .requiredOption('-o, --offset <n>', 'the next offset to consume', parseInteger)
        .option('-q, --queue <id>', 'only this queue (default: every queue)', parseInteger),
    async (client, o) => {
      const r = await client.post<Parameters<typeof renderReset>[0]>(
        `/api/groups/${seg(o.group)}/reset-offset`,
        {
          topic: o.topic,
          offset: o.offset,
          ...(o.queue !== undefined ? { queueId: o.queue } : {}),
        },
      );
      out(o.json ? formatJson(r) : renderReset(r));
    },
  );

  sub<CommonOptions & { groupName: string }>(
    'consumerConnection',
    'the clients connected in a consumer group',
    (cmd) =>
      cmd
        .requiredOption('-g, --groupName <group>', 'consumer group name')
        .option('-b, --brokerAddr <addr>', 'accepted and ignored (one broker)'),
    async (client, o) => {
      const conns = await client.get<ConsumerConnections>(`/api/groups/${seg(o.groupName)}/connections`);
      out(o.json ? formatJson(conns) : renderConsumerConnection(conns));
    },
  );

  registerMessageCommands(sub);
  registerAclCommands(sub);

  return admin;
}
