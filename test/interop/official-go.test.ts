/** Interop matrix: the official RocketMQ 5.x Go client against Vela (test/interop/official/scenarios.ts). */
import { officialClientMatrix } from './official/scenarios.js';

officialClientMatrix('go');
