/**
 * `.ci/run`'s check of the compiled build (issue 15 point 1): on its fresh clone, `npm start`
 * (scripts/start.mjs: the stale check, then `dist/src/cli.js serve` on plain node) answers a GraphQL query over the demo
 * cluster, and SIGTERM sent to npm reaches the gateway: it logs its shut-down, exits, and
 * nothing listens on its port afterwards. Exits non-zero, with the server's output, otherwise.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { answers, npmStart } from '../bench/launch.ts';

const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-start-'));
try {
  const server = await npmStart('{ nodes { totalCount } }', { LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lockkeeper.db')}` });
  const failures: string[] = [];
  if ((server.data as { nodes?: { totalCount?: number } }).nodes?.totalCount !== 4) failures.push(`unexpected answer ${JSON.stringify(server.data)}`);
  if (/tsx/.test(server.output())) failures.push('the output mentions tsx');
  const exit = await server.stop('SIGTERM');
  if (!/"msg":"shutting down"/.test(server.output()) || !/"signal":"SIGTERM"/.test(server.output()))
    failures.push('the gateway did not log a SIGTERM shut-down');
  if (exit.code !== 0) failures.push(`npm start exited with ${exit.code ?? exit.signal}`);
  if (await answers(server.url)) failures.push(`something still answers on ${server.url} after npm exited`);
  if (failures.length) {
    console.error(`compiled npm start: ${failures.join('; ')}\n--- output ---\n${server.output()}`);
    process.exitCode = 1;
  } else {
    console.log(`compiled npm start: answered in ${server.msToFirstAnswer.toFixed(0)} ms, stopped cleanly on SIGTERM`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
