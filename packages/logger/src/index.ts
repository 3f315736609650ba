/**
 * The one logger factory: pino, one JSON line per event, with the service name on every line.
 * Anything that could hold a secret is redacted by path, wherever a caller puts it.
 */
import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/** Paths never written to a log. */
export const REDACTED_PATHS = [
  'api_key',
  'apiKey',
  'secret',
  'authorization',
  'token',
  '*.api_key',
  '*.apiKey',
  '*.secret',
  '*.authorization',
  '*.token',
  'req.headers.authorization',
  'req.headers["x-admin-token"]',
  'headers.authorization',
];

/** Creates the logger of a service. */
export function createLogger(service: string, level = 'info', options: LoggerOptions = {}): Logger {
  return pino({
    level,
    base: { service },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...options,
  });
}
