/**
 * Interop matrix, TLS + ACL mode: the official RocketMQ 5.x Java client over TLS, signing its requests, against Vela
 * with access control on (test/interop/official/acl-mode.ts).
 */
import { officialClientMatrix } from './official/scenarios.js';
import { ACL_MODE } from './official/acl-mode.js';

officialClientMatrix('java', ACL_MODE);
