/**
 * The HTTP JSON admin API (Fastify), on the broker's HTTP port. `vela admin` and the SDK's `Admin`
 * are clients of it. Errors answer with the catalogue's RocketMQ code and an HTTP status to match.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { Code, codeFacts } from '../common/codes.js';
import { isVelaError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { AdminOperations, UpdateGroupInput, UpdateTopicInput } from './operations.js';
import { accessHook } from './access.js';
import type { BrokerMetrics } from '../metrics/broker-metrics.js';
import { registerConsole } from '../dashboard/console-routes.js';
import { aclAuthHook } from './acl-auth.js';
import { registerAclRoutes } from './acl-routes.js';

export interface AdminHttpOptions {
  host: string;
  port: number;
  logger: Logger;
  /** The gRPC address clients use, for topicRoute. */
  grpcAddress: () => string;
  /** Serve HTTPS with this certificate and key (PEM) instead of HTTP. */
  https?: { cert: string; key: string };
  /** The admin token (`adminToken`); '' for none. */
  token: string;
  /** Served at `GET /metrics` when given (the `metrics` setting). */
  metrics?: BrokerMetrics | null;
}

/**
 * Query strings with one value per name: a repeated name (`?key=a&key=b`) keeps its last value
 * instead of becoming an array that every handler would have to expect.
 */
function singleValued(query: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(query)) out[k] = v;
  return out;
}

export async function startAdminHttp(
  ops: AdminOperations,
  opts: AdminHttpOptions,
): Promise<{ app: FastifyInstance; port: number }> {
  const base = {
    logger: false,
    bodyLimit: 8 * 1024 * 1024,
    routerOptions: { querystringParser: singleValued },
  };
  const app = (
    opts.https ? Fastify({ ...base, https: { ...opts.https, minVersion: 'TLSv1.2' } }) : Fastify(base)
  ) as FastifyInstance;
  app.addHook('onRequest', accessHook({ token: opts.token }));
  app.addHook('onRequest', aclAuthHook(ops.accessControl));
  app.setErrorHandler((err, _req, reply) => {
    if (isVelaError(err)) {
      if (err.kind === 'ADMIN_UNAUTHORIZED') void reply.header('www-authenticate', 'Bearer realm="vela"');
      void reply
        .status(codeFacts(err.code).http)
        .send({ code: err.code, error: err.kind, message: err.message });
      return;
    }
    const status = (err as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500) opts.logger.error({ err }, 'admin API error');
    void reply.status(status).send({
      code: status >= 500 ? Code.INTERNAL_SERVER_ERROR : Code.BAD_REQUEST,
      error: 'BAD_REQUEST',
      message: (err as Error).message,
    });
  });

  app.get('/healthz', async () => ({ ok: true }));
  registerConsole(app);
  const metrics = opts.metrics;
  if (metrics) {
    app.get('/metrics', async (_req, reply) => {
      const text = await metrics.render();
      return reply.header('content-type', metrics.contentType).send(text);
    });
  }
  registerAclRoutes(app, ops.acl);
  app.get('/api/broker', async () => ops.brokerInfo());
  app.get('/api/overview', async () => ops.overview());
  app.get('/api/topic-stats', async () => ops.topicStats());
  app.get('/api/group-stats', async () => ops.groupStats());

  app.get('/api/topics', async () => ops.topicList());
  app.post<{ Body: UpdateTopicInput }>('/api/topics', async (req) =>
    ops.updateTopic(req.body ?? ({} as UpdateTopicInput)),
  );
  app.get<{ Params: { topic: string } }>('/api/topics/:topic', async (req) => ops.getTopic(req.params.topic));
  app.delete<{ Params: { topic: string } }>('/api/topics/:topic', async (req) => {
    await ops.deleteTopic(req.params.topic);
    return { deleted: req.params.topic };
  });
  app.get<{ Params: { topic: string } }>('/api/topics/:topic/status', async (req) =>
    ops.topicStatus(req.params.topic),
  );
  app.get<{ Params: { topic: string } }>('/api/topics/:topic/route', async (req) =>
    ops.topicRoute(req.params.topic, opts.grpcAddress()),
  );

  app.get<{ Querystring: { topic?: string } }>('/api/timer', async (req) => ops.timerStatus(req.query.topic));
  app.get<{ Querystring: { topic?: string } }>('/api/transactions', async (req) =>
    ops.transactionStatus(req.query.topic),
  );

  app.get('/api/groups', async () => ops.groupList());
  app.post<{ Body: UpdateGroupInput }>('/api/groups', async (req) =>
    ops.updateSubGroup(req.body ?? ({} as UpdateGroupInput)),
  );
  app.get<{ Params: { group: string } }>('/api/groups/:group', async (req) => ops.getGroup(req.params.group));
  app.delete<{ Params: { group: string } }>('/api/groups/:group', async (req) => {
    await ops.deleteSubGroup(req.params.group);
    return { deleted: req.params.group };
  });
  app.get<{ Params: { group: string }; Querystring: { topic?: string } }>(
    '/api/groups/:group/progress',
    async (req) => ops.consumerProgress(req.params.group, req.query.topic),
  );
  app.post<{
    Params: { group: string };
    Body: { topic: string; timestamp?: number; offset?: number; queueId?: number };
  }>('/api/groups/:group/reset-offset', async (req) =>
    ops.resetOffset({ ...(req.body ?? { topic: '' }), group: req.params.group }),
  );
  app.get<{ Params: { group: string } }>('/api/groups/:group/detail', async (req) =>
    ops.groupDetail(req.params.group),
  );
  app.get<{ Params: { group: string } }>('/api/groups/:group/connections', async (req) =>
    ops.consumerConnection(req.params.group),
  );

  app.get<{ Params: { group: string }; Querystring: { offset?: string; limit?: string } }>(
    '/api/groups/:group/dlq',
    async (req) =>
      ops.queryDlqMsg(
        req.params.group,
        req.query.offset ? Number(req.query.offset) : undefined,
        req.query.limit ? Number(req.query.limit) : undefined,
      ),
  );
  app.post<{ Params: { group: string }; Body: { messageId?: string } }>(
    '/api/groups/:group/dlq/resend',
    async (req) => ops.resendDlqMsg(req.params.group, req.body?.messageId),
  );
  app.get<{ Params: { id: string } }>('/api/messages/:id/deliveries', async (req) =>
    ops.messageDeliveries(req.params.id),
  );
  app.get<{ Params: { topic: string }; Querystring: { from?: string; to?: string; limit?: string } }>(
    '/api/topics/:topic/messages',
    async (req) =>
      ops.queryMsgByTime(
        req.params.topic,
        Number(req.query.from ?? 0),
        Number(req.query.to ?? Date.now()),
        req.query.limit ? Number(req.query.limit) : undefined,
      ),
  );
  app.get<{ Params: { id: string }; Querystring: { topic?: string } }>('/api/messages/:id', async (req) =>
    ops.queryMsgById(req.params.id, req.query.topic),
  );
  app.get<{ Querystring: { key?: string; topic?: string; limit?: string } }>('/api/messages', async (req) =>
    ops.queryMsgByKey(
      req.query.key ?? '',
      req.query.topic,
      req.query.limit ? Number(req.query.limit) : undefined,
    ),
  );

  try {
    await app.listen({ host: opts.host, port: opts.port });
  } catch (err) {
    const inUse = (err as NodeJS.ErrnoException).code === 'EADDRINUSE';
    throw new Error(
      inUse
        ? `HTTP port ${opts.host}:${opts.port} is already in use`
        : `cannot listen on ${opts.host}:${opts.port}: ${(err as Error).message}`,
    );
  }
  const addr = app.server.address();
  return { app, port: typeof addr === 'object' && addr ? addr.port : opts.port };
}
