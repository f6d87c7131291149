/**
 * The HTTP JSON admin API (Fastify), on the broker's HTTP port. `vela admin` and the SDK's `Admin`
 * are clients of it. Errors answer with the catalogue's RocketMQ code and an HTTP status to match.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { Code, codeFacts } from '../common/codes.js';
import { isVelaError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { AdminOperations, UpdateGroupInput, UpdateTopicInput } from './operations.js';
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
}

export async function startAdminHttp(
  ops: AdminOperations,
  opts: AdminHttpOptions,
): Promise<{ app: FastifyInstance; port: number }> {
  const app = (
    opts.https
      ? Fastify({
          logger: false,
          bodyLimit: 8 * 1024 * 1024,
          https: { ...opts.https, minVersion: 'TLSv1.2' },
        })
      : Fastify({ logger: false, bodyLimit: 8 * 1024 * 1024 })
  ) as FastifyInstance;
  app.addHook('onRequest', aclAuthHook(ops.accessControl));
  app.setErrorHandler((err, _req, reply) => {
    if (isVelaError(err)) {
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
  registerAclRoutes(app, ops.acl);
  app.get('/api/broker', async () => ops.brokerInfo());

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
