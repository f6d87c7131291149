/** Interop matrix: the official RocketMQ 5.x Java client against Vela (test/interop/official/scenarios.ts). */
import { officialClientMatrix } from './official/scenarios.js';

officialClientMatrix('java');
