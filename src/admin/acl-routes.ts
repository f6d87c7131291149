/**
 * The HTTP routes of user and ACL administration (mqadmin's createUser … listAcl), under `/api/acl`.
 * When access control is on, acl-auth.ts lets only super users reach any `/api/` route.
 */
import type { FastifyInstance } from 'fastify';
import type { AclOperations } from './acl-operations.js';

type Body = Record<string, unknown>;

export function registerAclRoutes(app: FastifyInstance, acl: AclOperations): void {
  app.get<{ Querystring: { filter?: string } }>('/api/acl/users', async (req) =>
    acl.listUser(req.query.filter),
  );
  app.post<{ Body: Body }>('/api/acl/users', async (req) => acl.createUser(req.body ?? {}));
  app.get<{ Params: { username: string } }>('/api/acl/users/:username', async (req) =>
    acl.getUser(req.params.username),
  );
  app.put<{ Params: { username: string }; Body: Body }>('/api/acl/users/:username', async (req) =>
    acl.updateUser(req.params.username, req.body ?? {}),
  );
  app.delete<{ Params: { username: string } }>('/api/acl/users/:username', async (req) => {
    await acl.deleteUser(req.params.username);
    return { deleted: req.params.username };
  });

  app.get<{ Querystring: { subject?: string; resource?: string } }>('/api/acl', async (req) =>
    acl.listAcl(req.query.subject, req.query.resource),
  );
  app.post<{ Body: Body }>('/api/acl', async (req) => acl.upsertAcl(req.body ?? {}));
  app.put<{ Body: Body }>('/api/acl', async (req) => acl.upsertAcl(req.body ?? {}));
  app.get<{ Params: { subject: string } }>('/api/acl/:subject', async (req) =>
    acl.getAcl(req.params.subject),
  );
  app.delete<{ Params: { subject: string }; Querystring: { resource?: string } }>(
    '/api/acl/:subject',
    async (req) => {
      await acl.deleteAcl(req.params.subject, req.query.resource);
      return { deleted: req.params.subject, ...(req.query.resource ? { resource: req.query.resource } : {}) };
    },
  );
}
