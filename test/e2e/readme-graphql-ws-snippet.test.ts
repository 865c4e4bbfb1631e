/**
 * The graphql-ws snippet of docs/operations.md (marked run-by this file), run as written (only its URL and, for the second case,
 * its commented-out token line changed): against a gateway with authentication on, without
 * a token it reports the 4403 refusal after one connection attempt instead of retrying for
 * ~37 s; with the token it receives events.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/child-server.ts';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';

const PAGE = readFileSync(join(PROJECT_ROOT, 'docs/operations.md'), 'utf8');
const SNIPPET = [...PAGE.matchAll(/```ts[^\n]*\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes("from 'graphql-ws'"))!;

let secured: SecuredServer | undefined;
let dir: string | undefined;
afterEach(async () => {
  await secured?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  secured = undefined;
  dir = undefined;
});

/** Runs `source` with tsx from a folder that sees the project's packages; resolves when it exits or prints `until`. */
function runSnippet(source: string, until?: RegExp) {
  dir = mkdtempSync(join(tmpdir(), 'lk-readme-ws-'));
  symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  writeFileSync(join(dir, 'snippet.ts'), source);
  const child = spawn(process.execPath, ['--import', 'tsx', 'snippet.ts'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (until?.test(out)) child.kill('SIGTERM');
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

describe('README graphql-ws snippet', () => {
  it('is there, and stops retrying on 4403', () => {
    expect(SNIPPET).toContain('shouldRetry');
    expect(SNIPPET).toContain('4403');
  });

  it('without a token: reports the refusal after a single connection attempt', async () => {
    secured = await startSecuredServer();
    let upgrades = 0;
    secured.t.app.server.on('upgrade', () => upgrades++);
    const run = await runSnippet(SNIPPET.replace('ws://127.0.0.1:4000/graphql', secured.wsUrl));
    expect(run.err).toMatch(/^subscription failed: 4403 authentication required/m);
    expect(upgrades).toBe(1);
  }, 60_000);

  it('with the token line filled in: receives events', async () => {
    secured = await startSecuredServer();
    const source = SNIPPET.replace('ws://127.0.0.1:4000/graphql', secured.wsUrl).replace(
      "// With authentication on (see Access control): connectionParams: { authorization: 'Bearer lk_…' },",
      `connectionParams: { authorization: 'Bearer ${secured.tokens.viewer}' },`,
    );
    expect(source).toContain(secured.tokens.viewer);
    const connected = new Promise((resolve) => secured!.t.app.server.once('upgrade', resolve));
    const running = runSnippet(source, /"nodeChanged"/);
    await connected;
    // No signal says when the server registered the subscription: change the node until an event is printed (bounded).
    let settled = false;
    void running.then(() => (settled = true));
    for (let i = 0; i < 40 && !settled; i++) {
      await secured.gql(`mutation { simulation { setNodeOnline(nodeId: "2", online: ${i % 2 === 1}) { __typename } } }`, { token: secured.tokens.admin });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const run = await running;
    expect(run.out).toMatch(/\{"nodeChanged":\{"id":"2","availability":"(OFFLINE|ACTIVE)","cordoned":false\}\}/);
  }, 60_000);
});
