/**
 * Vela's public entry point, `import … from 'vela'`: the TypeScript SDK (Producer, PushConsumer,
 * SimpleConsumer, PullConsumer, Admin) and the status codes its errors carry.
 *
 * The broker is `vela/server` (`startBroker`), the storage engine `vela/store`.
 */
export * from './client/index.js';
export { Code, codeName } from './common/codes.js';
export { createLogger } from './common/logger.js';
export type { Logger, LoggerOptions } from './common/logger.js';
