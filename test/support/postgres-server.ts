/**
 * A throw-away PostgreSQL server for tests (spec high-availability §7): `initdb` + `pg_ctl` on a
 * temporary directory, a free port on 127.0.0.1, trust authentication, removed afterwards.
 * The server refuses to run as root, so as root it runs as the `postgres` user (Debian's
 * package creates it); as anyone else it runs as that user.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The one role the server checks passwords for (scram-sha-256): the others are trusted. */
export const PASSWORD_ROLE = 'lk_password_user';

export interface ThrowawayPostgres {
  /** `postgresql://postgres@127.0.0.1:PORT/postgres` */
  url: string;
  port: number;
  dataDir: string;
  /** Stops the server as a crash does (`-m immediate`), keeping its data: the database goes away. */
  pause(): void;
  /** Starts it again on the same port and data. */
  resume(): void;
  stop(): void;
}

/** The directory holding `initdb` and `pg_ctl`: $LOCKKEEPER_PG_BIN, else the newest Debian package's. */
function postgresBinDir(): string | null {
  const fromEnv = process.env.LOCKKEEPER_PG_BIN;
  if (fromEnv) return existsSync(join(fromEnv, 'pg_ctl')) ? fromEnv : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0]!, 'bin') : null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const isRoot = () => process.getuid?.() === 0;

function postgresUser(): { uid: number; gid: number } | null {
  const out = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (out.status !== 0 || gid.status !== 0) return null;
  return { uid: Number(out.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Runs a server binary, as `postgres` when we are root. Throws with its output on failure. */
function run(bin: string, args: string[]): void {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  execFileSync(cmd as string, argv as string[], { stdio: 'pipe', env: { ...process.env, LC_ALL: 'C' } });
}

/** Why no server can be started here, or null when one can. */
export function postgresUnavailableReason(): string | null {
  const bin = postgresBinDir();
  if (!bin) return "no PostgreSQL server binaries (install Debian's postgresql package or set LOCKKEEPER_PG_BIN)";
  if (isRoot() && !postgresUser()) return 'running as root and there is no postgres user to run the server as';
  return null;
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const reason = postgresUnavailableReason();
  if (reason) throw new Error(reason);
  const bin = postgresBinDir()!;
  const dataDir = mkdtempSync(join(tmpdir(), 'lk-pg-'));
  chmodSync(dataDir, 0o700);
  if (isRoot()) {
    const user = postgresUser()!;
    chownSync(dataDir, user.uid, user.gid);
  }
  const port = await freePort();
  // fsync off: a test server's data need not survive a power cut, and it spares the
  // shared disk. synchronous_commit stays on: a commit must survive the server's crash (the
  // tests' pause() is one), as on a real server; with it off, a lease taken just before the
  // crash was lost and taken again at epoch 1. The socket lives in the data directory, never in /var/run.
  const options = `-p ${port} -k ${dataDir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=300`;
  try {
    run(join(bin, 'initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
    writeFileSync(join(dataDir, 'pg_hba.conf'), `local all all trust\nhost all ${PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n`);
    run(join(bin, 'pg_ctl'), ['-D', dataDir, '-o', options, '-l', join(dataDir, 'server.log'), '-w', '-t', '60', 'start']);
  } catch (e) {
    rmSync(dataDir, { recursive: true, force: true });
    const stderr = (e as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`could not start a throw-away PostgreSQL: ${e instanceof Error ? e.message : String(e)} ${stderr}`);
  }
  let stopped = false;
  return {
    url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    pause() {
      run(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
    },
    resume() {
      run(join(bin, 'pg_ctl'), ['-D', dataDir, '-o', options, '-l', join(dataDir, 'server.log'), '-w', '-t', '60', 'start']);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        run(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
