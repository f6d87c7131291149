/**
 * `npm run remoting:build`: build the Remoting tests' Java and Go client programs from their pinned
 * versions (cached in .cache/remoting-clients/). The tests build them on first use too; CI runs this
 * first so that a missing toolchain or an unreachable registry fails before the tests, clearly.
 */
import { goBinary, javaClasspath } from './client-programs.js';

const t0 = Date.now();
await javaClasspath();
console.log(`remoting: Java client program ready (${Date.now() - t0} ms)`);
const t1 = Date.now();
await goBinary();
console.log(`remoting: Go client program ready (${Date.now() - t1} ms)`);
