import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { PROJECT_ROOT } from '../support/child-server.ts';

/**
 * Issue 30, point 2 (and the CLI's part of point 3), through the real binary
 * (bin/lockkeeper.js) against a gateway listening on loopback: the gateway runs on a
 * virtual clock, so what the CLI prints about time is exact.
 */

const BIN = join(PROJECT_ROOT, 'bin/lockkeeper.js');

function run(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

/** Completes `words` (the last one being typed) with the script of `lockkeeper completion bash`, in bash. */
function complete(words: string[]) {
  const script = `source <('${process.execPath}' '${BIN}' completion bash)
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}
_lockkeeper; printf '%s\\n' "\${COMPREPLY[@]}"`;
  return new Promise<string[]>((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(out.split('\n').filter(Boolean)) : reject(new Error(`bash exited ${code}`))));
  });
}

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await createTestApp({
    topology: {
      nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
      vms: [{ namespace: 'prod', name: 'web', nodeId: '3' }],
      shards: ['a', 'b', 'c', 'd'].map((tenantId) => ({ tenantId, attachedNodeId: '1', secondaries: [{ nodeId: '2' }] })),
    },
    latenciesMs: { cutOver: 10_000 },
    settings: { maxConcurrentMoves: 1 },
  });
  ({ url } = await t.app.start(0, '127.0.0.1'));
});
afterAll(async () => {
  await t?.stop();
});

describe('lockkeeper, the binary (issue 30, point 2)', () => {
  it('--help lists every command; each verb has --help with its flags and an example; help <verb> says the same', async () => {
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    expect(top.out).toContain('completion bash|zsh');
    expect(top.out).toContain('lockkeeper <command> --help for flags and examples');
    const drain = await run(['drain', '--help']);
    expect(drain.code).toBe(0);
    expect(drain.out).toMatch(/^usage:\n {2}lockkeeper drain <node> \[--watch\] \[--reason R\]/);
    expect(drain.out).toMatch(/^ {2}--watch {2,}follow the operation live to its end/m);
    expect(drain.out).toMatch(/^ {2}--json {2,}machine-readable: every answer, refusal and error is JSON on stdout$/m);
    expect(drain.out).toContain('examples:\n  lockkeeper drain 2 --watch --reason "kernel upgrade"\n');
    const rollout = await run(['rollout', '-h']);
    expect(rollout.out).toMatch(/--restart R +how a node’s restart is awaited \(default WAIT_FOR_REATTACH\) \(WAIT_FOR_REATTACH, NONE, CONFIRM; any case\)/);
    expect((await run(['help', 'rollout'])).out).toBe(rollout.out);
  });

  it('an unknown command: one line with the nearest command, exit 2; with --json, that as JSON', async () => {
    expect(await run(['nodez'])).toEqual({
      code: 2,
      out: '',
      err: 'lockkeeper: unknown command "nodez"; did you mean "nodes"? (lockkeeper --help lists the commands)\n',
    });
    expect((await run(['frobnicate'])).err).toBe('lockkeeper: unknown command "frobnicate" (lockkeeper --help lists the commands)\n');
    const asJson = await run(['rolout', '--json']);
    expect(asJson.code).toBe(2);
    expect(JSON.parse(asJson.out)).toEqual({
      error: {
        code: 'UNKNOWN_COMMAND',
        message: 'unknown command "rolout"; did you mean "rollout"? (lockkeeper --help lists the commands)',
        exitCode: 2,
        suggestion: 'rollout',
      },
    });
  });

  it('--json: refusals, usage errors and an unreachable gateway are JSON on stdout, with the documented exit codes', async () => {
    const notFound = await run(['drain', '404', '--json', '--server', url]);
    expect(notFound).toMatchObject({ code: 2, err: '' });
    expect(JSON.parse(notFound.out)).toEqual({ error: { code: 'NOT_FOUND', message: 'node 404 not found', exitCode: 2 } });
    const usage = await run(['nodes', '--bogus', '--json', '--server', url]);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.out).error).toMatchObject({ code: 'USAGE', exitCode: 2 });
    const gone = await run(['nodes', '--json', '--server', 'http://127.0.0.1:9/graphql']);
    expect(gone.code).toBe(3);
    expect(JSON.parse(gone.out).error).toMatchObject({ code: 'UNREACHABLE', exitCode: 3, url: 'http://127.0.0.1:9/graphql' });
  });

  it('enum arguments in any case, as `vms` prints them or as the label reads; a refusal lists the valid values', async () => {
    for (const given of ['SHUTDOWN', 'shutdown', 'Shutdown']) {
      const done = await run(['vm', 'strategy', 'prod/web', given, '--json', '--server', url]);
      expect(done.code).toBe(0);
      expect(JSON.parse(done.out)).toEqual([{ id: 'prod/web', maintenanceStrategy: 'SHUTDOWN', maintenanceStrategyLabel: 'Shutdown' }]);
    }
    const long = await run(['vm', 'strategy', 'prod/web', 'shutdown_and_restart_after_enable', '--json', '--server', url]);
    expect(JSON.parse(long.out)[0].maintenanceStrategyLabel).toBe('ShutdownAndRestartAfterEnable');
    expect(await run(['vm', 'strategy', 'prod/web', 'X', '--server', url])).toEqual({
      code: 2,
      out: '',
      err: 'lockkeeper vm: strategy "X" is not one of Migrate, ShutdownAndRestartAfterEnable, ShutdownAndRestartAfterDisable, Shutdown (any case) (lockkeeper vm --help)\n',
    });
    const policy = await run(['node', 'availability', '3', 'warming-up', '--json', '--server', url]);
    expect(JSON.parse(policy.out)).toEqual({ __typename: 'ClusterNode', id: '3', availability: 'WARMING_UP' });
    expect((await run(['node', 'availability', '3', 'Active', '--server', url])).code).toBe(0);
    expect((await run(['ops', '--state', 'sucess', '--server', url])).err).toBe(
      'lockkeeper ops: --state "sucess" is not one of RUNNING, PAUSED, CANCELLING, SUCCEEDED, FAILED, CANCELLED (any case) (lockkeeper ops --help)\n',
    );
  });

  it('shard config (neon:W10): bad JSON or --set with --patch is a usage error before any request; a backend without tenant configs gives the typed refusal as JSON', async () => {
    const both = await run(['shard', 'config', 'a', '--set', '{}', '--patch', '{}', '--server', url, '--json']);
    expect(both.code).toBe(2);
    expect(JSON.parse(both.out).error).toMatchObject({ code: 'USAGE', message: 'give --set or --patch, not both (lockkeeper shard --help)' });
    const notJson = await run(['shard', 'config', 'a', '--patch', '{pitr', '--server', url]);
    expect(notJson.code).toBe(2);
    expect(notJson.err).toContain('--patch: not JSON: {pitr');
    const notObject = await run(['shard', 'config', 'a', '--set', '[1]', '--server', url]);
    expect(notObject.code).toBe(2);
    expect(notObject.err).toContain('the tenant config must be a JSON object');
    // The simulated cluster keeps no tenant configs: the gateway's typed refusal, as JSON.
    const read = await run(['shard', 'config', 'a', '--server', url, '--json']);
    expect(read.code, read.err).toBe(2);
    expect(JSON.parse(read.out).error.code).toMatch(/^[A-Z_]+$/);
  });

  it('leader: a sentence, not "leader: none"', async () => {
    expect(await run(['leader', '--server', url])).toEqual({ code: 0, out: 'replica sole is the only replica and leads (no election)\n', err: '' });
  });

  it('completion bash completes commands, sub-commands, flags and enum values; zsh has the same words', async () => {
    expect(await complete(['lockkeeper', 'nod'])).toEqual(['node', 'nodes']);
    expect(await complete(['lockkeeper', 'rollout', 'pa'])).toEqual(['pause']);
    expect(await complete(['lockkeeper', 'rollout', 'start', '--action', ''])).toEqual(['MAINTENANCE', 'DRAIN_FILL']);
    expect(await complete(['lockkeeper', 'drain', '2', '--w'])).toEqual(['--watch']);
    const zsh = await run(['completion', 'zsh']);
    expect(zsh.out.split('\n')[0]).toBe('#compdef lockkeeper');
    expect(zsh.out).toContain('rollout:--action) compadd -- MAINTENANCE DRAIN_FILL; return;;');
    expect(zsh.out).toContain('compdef _lockkeeper lockkeeper');
    expect(await run(['completion', 'fish'])).toMatchObject({
      code: 2,
      err: 'lockkeeper completion: which shell? bash or zsh (e.g. source <(lockkeeper completion bash))\n',
    });
  });

  it('issue 30 point 3: ops shows a running drain’s ETA, then "over by" once its estimate has passed, never a past time', { timeout: 120_000 }, async () => {
    t.cluster.simulation.injectFaults({ stuck: ['c'] });
    const started = JSON.parse((await run(['drain', '1', '--json', '--server', url])).out);
    // Time is driven in-process; what is asserted is read through the binary.
    const operation = async () =>
      (await t.gql(`{ operation(id: "${started.id}") { ... on Operation { counts { moved } etaOverdueSeconds } } }`)).data.operation;
    while ((await operation()).counts.moved < 2) await t.clock.advance(1_000);
    const [row] = (await run(['ops', '--node', '1', '--server', url])).out.split('\n').slice(1);
    expect(row).toMatch(new RegExp(`^${started.id}\\s+DRAIN\\s+1\\s+RUNNING\\s+2\\s+0\\s+0\\s+4\\s+(\\d+s|\\dm\\d\\ds)\\s`));
    while ((await operation()).etaOverdueSeconds === null) await t.clock.advance(5_000);
    const over = async () => JSON.parse((await run(['ops', '--node', '1', '--json', '--server', url])).out)[0].etaOverdueSeconds;
    const before = await over();
    await t.clock.advance(65_000);
    expect((await over()) - before).toBeCloseTo(65, 3);
    const [late] = (await run(['ops', '--node', '1', '--server', url])).out.split('\n').slice(1);
    expect(late).toMatch(/\sRUNNING\s+2\s+0\s+0\s+4\s+stalled, over by \dm\d\ds\s/);
  });
});
