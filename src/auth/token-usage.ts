/** `lockkeeper token`'s usage, apart so that `lockkeeper --help` shows it without loading the database. */
export const TOKEN_USAGE = `usage:
  lockkeeper token create --scope viewer|operator|admin --name <name> [--expires-in 30d]
      prints the token once on stdout (store it now: only its hash is kept)
  lockkeeper token revoke <name|id>
  lockkeeper token list [--json]`;
