/** Thrown for any problem with the configuration; the message names the file and the key. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
