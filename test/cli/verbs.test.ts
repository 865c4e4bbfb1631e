import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { PROJECT_ROOT } from '../support/child-server.ts';

/** A real gateway on port 0 over a small simulated cluster (real clock, short latencies). */
async function gateway(env: Record<string, string> = {}): Promise<Started> {
  const cwd = mkdtempSync(join(tmpdir(), 'lk-cli-verbs-'));
  const nodes = ['1', '2', '3'].map((id) => ({ id, roles: ['worker', 'storage'] }));
  const vms = [
    { namespace: 'prod', name: 'web', nodeId: '3' },
    { namespace: 'prod', name: 'pinned', nodeId: '1', liveMigratable: false, liveMigratableReason: 'HostDeviceNotLiveMigratable' },
  ];
  const shards = Array.from({ length: 6 }, (_, i) => ({
    tenantId: `t${i}`,
    attachedNodeId: String((i % 3) + 1),
    secondaries: [{ nodeId: String(((i + 1) % 3) + 1) }],
  }));
  writeFileSync(
    join(cwd, 'lockkeeper.config.json'),
    JSON.stringify({
      plugins: [{ name: 'fake', options: { topology: { nodes, vms, shards }, latenciesMs: { cutOver: 30, migrate: 60, stop: 20, start: 20, cordon: 5 } } }],
    }),
  );
  return startLockkeeper({ log: createLogger('silent'), env, cwd, port: 0 });
}

/** Runs `lockkeeper <verb> …` through the real binary against the gateway (issue 30: the CLI is tested as a user runs it). */
async function cli(url: string, ...argv: string[]) {
  const { code, out, err } = await processCli(argv, { env: { LOCKKEEPER_URL: url } });
  return { code, out, err, json: () => JSON.parse(out) };
}

/** Runs `lockkeeper …` as a process (optionally under a pseudo-terminal, `script -q`). */
function processCli(args: string[], { tty = false, cols = 200, env = {} }: { tty?: boolean; cols?: number; env?: Record<string, string> } = {}) {
  const bin = join(PROJECT_ROOT, 'bin/lockkeeper.js');
  const command = tty
    ? ['script', ['-qec', `stty cols ${cols}; ${[process.execPath, bin, ...args].map((a) => `'${a}'`).join(' ')}`, '/dev/null']]
    : [process.execPath, [bin, ...args]];
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = spawn(command[0] as string, command[1] as string[], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, COLUMNS: '160', ...env },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

let s: Started;
beforeAll(async () => {
  s = await gateway();
});
afterAll(async () => {
  await s?.app.stop();
});

describe('lockkeeper client verbs against a real gateway (rollout:T1–T5)', () => {
  it('rollout:T3 nodes, vms and shards: a table for people, JSON for scripts', async () => {
    const table = await cli(s.url, 'nodes');
    expect(table.code).toBe(0);
    expect(table.out.split('\n')[0]).toMatch(/^ID\s+NAME\s+ZONE\s+AVAILABILITY\s+CORDONED\s+POLICY\s+MAINTENANCE\s+OPERATION\s+SAFE TO RESTART$/);
    // Node 1 runs a VM and holds shards; node 3 the same: neither is safe to restart now.
    expect(table.out.split('\n')[1]).toMatch(/no: 1 vm\(s\), 2 shard\(s\)$/);
    expect((await cli(s.url, 'nodes', '--json')).json().map((n: any) => n.id)).toEqual(['1', '2', '3']);
    expect((await cli(s.url, 'vms', '--node', '1', '--json')).json()).toMatchObject([{ id: 'prod/pinned', migratable: false }]);
    expect((await cli(s.url, 'shards', '--node', '2', '--json')).json().map((x: any) => x.id)).toEqual(['t1', 't4']);
  });

  it('rollout:T4 drain --watch and fill --watch follow to the end without a TTY in timestamped lines; refusals exit 2 with code and message', async () => {
    const drain = await cli(s.url, 'drain', '2', '--watch', '--reason', 'cli test');
    expect(drain.code).toBe(0);
    expect(drain.out).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z drain 2 (RUNNING|SUCCEEDED) /m);
    expect(drain.out).toMatch(/drain 2 SUCCEEDED 2\/2 shards/);
    // Node 2 runs no VM and every shard moved: safe to restart, exit 0.
    expect(drain.out).toMatch(/Z node 2 is safe to restart: nothing remains on it$/m);
    // Issue 30 point 2: the watch ends with a summary line.
    expect(drain.out.trim().split('\n').at(-1)).toMatch(/Z drain 2 SUCCEEDED in \d+s: 2\/2 shards \(2 done, 0 skipped, 0 failed\)$/);
    const again = await cli(s.url, 'drain', '2');
    expect(again).toMatchObject({
      code: 2,
      err: expect.stringMatching(/^lockkeeper drain: PRECONDITION_FAILED: node 2 has scheduling policy PAUSE_FOR_RESTART/),
    });
    expect(await cli(s.url, 'drain', '404')).toMatchObject({ code: 2, err: 'lockkeeper drain: NOT_FOUND: node 404 not found\n' });
    expect((await cli(s.url, 'cancel', '2')).code).toBe(2);
    expect((await cli(s.url, 'node', 'policy', '2', 'active', '--json')).json()).toMatchObject({ id: '2', schedulingPolicy: 'ACTIVE' });
    const fill = await cli(s.url, 'fill', '2', '--watch', '--json');
    expect(fill.code).toBe(0);
    const lines = fill.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.at(-1).operation).toMatchObject({ kind: 'FILL', state: 'SUCCEEDED' });
    const ops = (await cli(s.url, 'ops', '--node', '2', '--state', 'succeeded', '--json')).json();
    expect(ops.map((o: any) => o.kind)).toEqual(['FILL', 'DRAIN']);
    expect((await cli(s.url, 'watch', ops[0].id)).code).toBe(0);
  });

  it('maintenance plan|enable|disable|clear-error and vm strategy', async () => {
    const plan = await cli(s.url, 'maintenance', 'plan', '1');
    expect(plan.code).toBe(2);
    expect(plan.out).toContain('prod/pinned');
    expect((await cli(s.url, 'maintenance', 'enable', '1')).err).toMatch(/NON_MIGRATABLE_VMS|PRECONDITION_FAILED/);
    expect((await cli(s.url, 'vm', 'strategy', 'prod/pinned', 'Shutdown', '--json')).json()).toEqual([
      { id: 'prod/pinned', maintenanceStrategy: 'SHUTDOWN', maintenanceStrategyLabel: 'Shutdown' },
    ]);
    expect((await cli(s.url, 'maintenance', 'plan', '1', '--json')).json()).toMatchObject({ accepted: true });
    expect(await cli(s.url, 'maintenance', 'enable', '1', '--watch', '--deadline', '10m', '--reason', 'bios')).toMatchObject({ code: 0 });
    expect((await cli(s.url, 'maintenance', 'clear-error', '1')).code).toBe(2);
    expect(await cli(s.url, 'maintenance', 'disable', '1', '--watch')).toMatchObject({ code: 0 });
    expect((await cli(s.url, 'vm', 'strategy', 'prod/pinned', '-')).code).toBe(0);
  });

  it('rollout:T5 rollout plan, start --watch exits 4 when it pauses; pause, resume, continue, cancel; watch of a cancelled rollout exits 1', async () => {
    const plan = (await cli(s.url, 'rollout', 'plan', '2', '3', '--action', 'drain_fill', '--json')).json();
    expect(plan.waves).toEqual([
      { number: 1, nodeIds: ['2'] },
      { number: 2, nodeIds: ['3'] },
    ]);
    const watching = cli(s.url, 'rollout', 'start', '2', '3', '--action', 'DRAIN_FILL', '--restart', 'confirm', '--watch', '--reason', 'cli');
    let rollout: any;
    while (!rollout) [rollout] = (await cli(s.url, 'ops', '--state', 'RUNNING', '--json')).json().filter((o: any) => o.kind === 'ROLLOUT');
    expect((await cli(s.url, 'rollout', 'pause', rollout.id, '--reason', 'coffee', '--json')).json()).toMatchObject({ state: 'PAUSED' });
    const paused = await watching;
    expect(paused.code).toBe(4);
    expect(paused.out).toMatch(/rollout wave 1 PAUSED 0\/2 nodes .*paused by anonymous: coffee/);
    expect(paused.err).toMatch(/is PAUSED and needs a person/);
    expect((await cli(s.url, 'rollout', 'continue', rollout.id, '3')).err).toMatch(
      /^lockkeeper rollout: PRECONDITION_FAILED: node 3 is not waiting for a confirmation/,
    );
    expect((await cli(s.url, 'rollout', 'resume', rollout.id)).code).toBe(0);
    expect((await cli(s.url, 'rollout', 'cancel', rollout.id)).code).toBe(0);
    expect((await cli(s.url, 'rollout', 'watch', rollout.id)).code).toBe(1);
    expect((await cli(s.url, 'rollout', 'pause', rollout.id)).code).toBe(2);
    expect((await cli(s.url, 'rollout', 'start', 'nope', '--action', 'MAINTENANCE')).err).toBe('lockkeeper rollout: NOT_FOUND: node nope not found\n');
  });

  it('events: the log as JSON; unknown verbs and flags exit 2 with usage', async () => {
    const page = (await cli(s.url, 'events', '--after', '0', '--json')).json();
    expect(page.events.length).toBeGreaterThan(0);
    expect(page.events[0].seq).toBe(1);
    // The payload is JSON as it is (issue 17, point 6), and the plain listing prints it as JSON.
    expect(typeof page.events[0].payload).toBe('object');
    const lines = (await cli(s.url, 'events', '--after', '0')).out.trim().split('\n');
    expect(lines[0]!.split('  ').at(-1)).toBe(JSON.stringify(page.events[0].payload));
    expect(lines.join('\n')).not.toContain('[object Object]');
    expect(await cli(s.url, 'nodes', '--bogus')).toMatchObject({ code: 2, err: "lockkeeper nodes: Unknown option '--bogus' (lockkeeper nodes --help)\n" });
    expect((await cli(s.url, 'rollout', 'frobnicate')).code).toBe(2);
    expect((await processCli(['frobnicate'])).code).toBe(2);
  });

  it('rollout:T5 an unreachable gateway or a refused token exits 3 with one line naming the URL', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    const gone = await cli(`http://127.0.0.1:${port}/graphql`, 'nodes');
    expect(gone).toMatchObject({ code: 3, err: `lockkeeper nodes: cannot reach http://127.0.0.1:${port}/graphql: ECONNREFUSED\n` });
    const secured = await gateway({ LOCKKEEPER_ADMIN_TOKEN: 'a-bootstrap-token-of-enough-length' });
    try {
      const denied = await cli(secured.url, 'nodes', '--token', 'lk_wrong');
      expect(denied.code).toBe(3);
      expect(denied.err.trim().split('\n')).toHaveLength(1);
      expect(denied.err).toContain(secured.url);
      expect((await cli(secured.url, 'nodes', '--token', 'a-bootstrap-token-of-enough-length', '--json')).code).toBe(0);
    } finally {
      await secured.app.stop();
    }
  });

  it(
    'rollout:T3 rollout:T4 as a process: events --follow prints one JSON line per event; drain --watch without a TTY prints lines and exits 5 when the node is not safe to restart; under a pseudo-terminal it draws a progress bar',
    { timeout: 180_000 },
    async () => {
      // Node 3 runs prod/web: its drain SUCCEEDED, but the node is not safe to restart (exit 5, naming the VM).
      const plain = await processCli(['drain', '3', '--watch', '--server', s.url]);
      expect(plain).toMatchObject({ code: 5, err: '' });
      expect(plain.out).toMatch(/Z drain 3 SUCCEEDED 2\/2 shards/);
      expect(plain.out).toMatch(/Z node 3 is NOT safe to restart: 1 workload\(s\) remain\n.*Z {3}vm prod\/web: VM_RUNNING: still running on node 3/);
      expect(plain.out).not.toContain('\u001b[');

      const follow = spawn(process.execPath, [join(PROJECT_ROOT, 'bin/lockkeeper.js'), 'events', '--follow', '--after', '0', '--json', '--server', s.url], {
        cwd: PROJECT_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const lines = await new Promise<any[]>((resolve) => {
        let buf = '';
        follow.stdout.on('data', (d: Buffer) => {
          buf += d.toString();
          const complete = buf.split('\n').slice(0, -1);
          if (complete.length >= 3) resolve(complete.slice(0, 3).map((l) => JSON.parse(l)));
        });
      });
      follow.kill();
      expect(lines.map((l) => l.seq)).toEqual([1, 2, 3]);

      await cli(s.url, 'node', 'policy', '3', 'ACTIVE');
      const tty = await processCli(['fill', '3', '--watch', '--server', s.url], { tty: true, cols: 60 });
      expect(tty.code).toBe(0);
      expect(tty.out).toMatch(/fill 3 \[[█░]+\] \d+\/\d+ shards \| ETA .* \| SUCCEEDED/);
      expect(tty.out).toContain('\u001b[');
      // Issue 30 point 2: every drawn bar fits the terminal's 60 columns, and a summary line ends it.
      // eslint-disable-next-line no-control-regex -- the terminal's escape sequences are what is stripped
      const screen = tty.out.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').split(/\r|\n/);
      const bars = screen.filter((l) => l.includes('] '));
      expect(bars.length).toBeGreaterThan(0);
      for (const line of bars) expect(line.length).toBeLessThanOrEqual(60);
      expect(screen.filter(Boolean).at(-1)).toMatch(/^fill 3 SUCCEEDED in \d+s: \d+\/\d+ shards \(\d+ done, 0 skipped, 0 failed\)$/);
    },
  );
});
