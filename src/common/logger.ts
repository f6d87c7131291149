/**
 * The structured logger (pino). Modules receive a `Logger` through their options and never write to
 * the console themselves.
 */
import { pino, type Logger as PinoLogger, type DestinationStream } from 'pino';

export type Logger = PinoLogger;

export interface LoggerOptions {
  /** @defaultValue 'info' (or `VELA_LOG_LEVEL`) */
  level?: string;
  /** Where log lines go. @defaultValue standard output */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.VELA_LOG_LEVEL ?? 'info';
  return options.destination ? pino({ level }, options.destination) : pino({ level });
}

/** A logger that discards everything (silent-logger.ts: it does not load pino). */
export { silentLogger } from './silent-logger.js';
