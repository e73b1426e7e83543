import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { Clock } from './clock.js';

/** What every service is built from. Services never see HTTP. */
export interface Deps {
  db: Db;
  config: Config;
  clock: Clock;
  log: Logger;
}

/** The subset of pino's logger that the domain uses. */
export interface Logger {
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
  debug(obj: unknown, msg?: string): void;
}
