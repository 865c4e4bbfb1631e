/**
 * The defaults the usage text names. A module of constants alone, so that `lockkeeper
 * --help` prints them without loading the config schema or the database (issue 30, point 2:
 * the CLI answers in a blink).
 */
export const DEFAULT_PORT = 4000;
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_DATABASE_URL = 'file:./data/lockkeeper.db';
