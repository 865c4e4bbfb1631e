/**
 * One `lockkeeper serve` per SQLite file. SQLite is the embedded store of one replica: two
 * gateways acting on one file would both run every operation. The first server holds an
 * exclusive SQLite lock on a sibling file (`<db>-serve.lock`) for as long as it runs; the
 * operating system drops it when the process ends, however it ends, so a gateway killed
 * with -9 never blocks the next one. The database file itself is not locked: the token
 * CLI still opens it while the server runs.
 */
import BetterSqlite3 from 'better-sqlite3';

class DatabaseInUseError extends Error {
  override readonly name = 'DatabaseInUseError';
  constructor(readonly file: string) {
    super(
      `database ${file} is already served by another lockkeeper process: one gateway per SQLite file ` +
        '(stop the other one, or run several replicas on PostgreSQL: see docs/ha-and-deployment.md)',
    );
  }
}

/** Takes the serve lock of the database file; throws DatabaseInUseError when another process holds it. Returns the release function. */
export function acquireServeLock(databaseFile: string): () => void {
  const lock = new BetterSqlite3(`${databaseFile}-serve.lock`, { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') throw new DatabaseInUseError(databaseFile);
    throw error;
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    lock.close();
  };
}
