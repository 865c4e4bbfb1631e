import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { PROJECT_ROOT } from '../support/child-server.ts';

let started: Started | undefined;
afterEach(async () => {
  await started?.app.stop();
});

async function startDemo(options: object): Promise<Started> {
  const cwd = mkdtempSync(join(tmpdir(), 'lk-rolling-'));
  writeFileSync(join(cwd, 'lockkeeper.config.json'), JSON.stringify({ plugins: [{ name: 'fake', options }] }));
  started = await startLockkeeper({ log: createLogger('silent'), env: {}, cwd, port: 0 });
  return started;
}

describe('examples/rolling-restart.ts', () => {
  it('restarts every storage node in turn and ends with every node ACTIVE and every shard attached', async () => {
    const s = await startDemo({ latenciesMs: { cutOver: 20 }, restartDelayMs: 100, heartbeatIntervalMs: 100 });
    const output = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'examples/rolling-restart.ts'), s.url], { cwd: PROJECT_ROOT });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('exit', (code) => resolve({ code, out, err }));
    });
    expect(output.err).toBe('');
    expect(output.code).toBe(0);
    expect(output.out).toContain('rolling restart of 4 storage node(s)');
    for (const id of ['1', '2', '3', '4']) expect(output.out).toContain(`node node-${id}: PAUSE_FOR_RESTART, restarting`);
    expect(output.out).toMatch(/drain: SUCCEEDED \d+\/\d+ moved/);
    expect(output.out).toContain('rolling restart done');
    const res = await fetch(s.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query:
          '{ nodes { edges { node { schedulingPolicy availability } } } shards(first: 1000) { totalCount } operations(first: 100) { totalCount edges { node { state } } } }',
      }),
    });
    const { data } = (await res.json()) as any;
    expect(data.nodes.edges.every((e: any) => e.node.schedulingPolicy === 'ACTIVE' && e.node.availability === 'ACTIVE')).toBe(true);
    expect(data.shards.totalCount).toBe(40);
    expect(data.operations.totalCount).toBe(8);
    expect(data.operations.edges.every((e: any) => e.node.state === 'SUCCEEDED')).toBe(true);
  });
});
