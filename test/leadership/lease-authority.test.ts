/**
 * ha:L9 in one process: the authority of an epoch ends when the lease's deadline passes on the
 * local monotonic clock (injected here), when a renewal is refused, or at step-down; a request
 * in flight under it is aborted at that instant, a new one is not sent, and work started under
 * an epoch keeps that epoch's authority — and its tag — after the replica stood by.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AuthorityLostError, EpochAuthority, issuingAuthority, standbyAuthority, underAuthority, type LeaseAuthority } from '../../src/cluster/authority.ts';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { leaderOnlyBackend } from '../../src/leadership/leader-only-backend.ts';
import { PostgresLeadership } from '../../src/leadership/leadership.ts';
import type { LeaseStore } from '../../src/leadership/lease-store.ts';
import { PageserverHttp, PageserverRequestError } from '../../plugins/pageserver/http-client.ts';
import { until } from '../support/child-server.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { pino } from 'pino';

const silent = pino({ level: 'silent' });

/** A lease store that grants epoch 7 and answers renewals as the test says. */
function fakeLease(renewal: { answer: 'renewed' | 'refused' | 'down' }): LeaseStore {
  return {
    acquire: async () => ({ epoch: 7, expiresAt: new Date(0) }),
    renew: async () => {
      if (renewal.answer === 'down') throw new Error('connection refused');
      return renewal.answer === 'renewed' ? new Date(0) : null;
    },
    release: async () => true,
    remainingMs: async () => null,
    current: async () => ({ live: false }),
    fence: () => [],
  } as unknown as LeaseStore;
}

/** A leader at epoch 7 whose monotonic clock the test moves (lease 10 s, renewals every 2 s: good for 8 s after the last one). */
async function leaderAt7(renewal = { answer: 'renewed' as 'renewed' | 'refused' | 'down' }) {
  const clock = { now: 1000 };
  const leadership = new PostgresLeadership({
    lease: fakeLease(renewal),
    address: () => 'http://r1',
    log: silent,
    leaseTtlMs: 10_000,
    leaseRenewMs: 2_000,
    monotonic: () => clock.now,
  });
  await leadership.start();
  return { leadership, clock, renewal };
}

const leaderships: PostgresLeadership[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const l of leaderships.splice(0)) await l.stop();
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

describe('the authority of an epoch (ha:L9)', () => {
  it('holds until the lease deadline on the injected monotonic clock, then refuses with a typed error and aborts its signal', () => {
    const clock = { now: 0 };
    let expired = 0;
    const authority = new EpochAuthority({ holder: 'r1', epoch: 7, monotonic: () => clock.now, deadline: () => 8000, expired: () => void expired++ });
    const run = authority.forRun('op-1');
    expect(authority.tag()).toBe('r1@7/background');
    expect(run.tag()).toBe('r1@7/run-op-1');
    clock.now = 7999;
    expect(() => run.assertValid()).not.toThrow();
    expect(run.signal.aborted).toBe(false);
    clock.now = 8000;
    expect(() => run.assertValid()).toThrow(AuthorityLostError);
    expect(expired).toBe(1);
    // One signal for the epoch and its runs.
    expect(authority.signal.aborted).toBe(true);
    expect(run.signal.aborted).toBe(true);
    expect(() => authority.assertValid()).toThrow(/r1@7\/background: no longer the leader \(lease not renewed in time\)/);
    try {
      run.assertValid();
    } catch (e) {
      expect(e).toMatchObject({ code: 'Unavailable', sender: 'r1@7/run-op-1' });
    }
  });

  it("a leader's authority ends when its lease deadline passes, checked at the request (no timer has run), and the replica stands by", async () => {
    const { leadership, clock } = await leaderAt7();
    leaderships.push(leadership);
    const epoch7 = leadership.authority();
    expect(epoch7.tag()).toBe(`${leadership.holder}@7/background`);
    expect(epoch7.leads).toBe(true);
    // Renewed at monotonic 1000: good until 1000 + 10000 − 2000.
    clock.now = 8999;
    expect(() => epoch7.assertValid()).not.toThrow();
    clock.now = 9000;
    expect(() => epoch7.assertValid()).toThrow(AuthorityLostError);
    expect(epoch7.signal.aborted).toBe(true);
    expect(leadership.status().role).toBe('standby');
    const now = leadership.authority();
    expect(now.tag()).toBe(`${leadership.holder}@standby/discovery`);
    expect(now.leads).toBe(false);
    expect(() => now.assertValid()).not.toThrow();
  });

  it.each([
    ['refused (taken over)', 'refused' as const, 'lease lost (taken over or expired)'],
    ['unanswered (database down)', 'down' as const, 'database unreachable'],
  ])('a renewal %s ends the epoch: its signal is aborted before the change of role is heard', async (_what, answer, reason) => {
    const { leadership, renewal } = await leaderAt7();
    leaderships.push(leadership);
    const epoch7 = leadership.authority();
    const heard: boolean[] = [];
    leadership.onChange(() => heard.push(epoch7.signal.aborted));
    renewal.answer = answer;
    await (leadership as unknown as { tick(): Promise<void> }).tick();
    expect(heard).toEqual([true]);
    expect(() => epoch7.assertValid()).toThrow(`no longer the leader (${reason})`);
  });

  it('a fenced write refused (lost) ends the epoch at once', async () => {
    const { leadership } = await leaderAt7();
    leaderships.push(leadership);
    const epoch7 = leadership.authority();
    leadership.lost('a transaction was refused by the fence');
    expect(epoch7.signal.aborted).toBe(true);
    expect(() => epoch7.assertValid()).toThrow('no longer the leader (a transaction was refused by the fence)');
  });
});

describe('plugin requests under an authority (ha:L9)', () => {
  /** A server that holds every request unanswered and records what it received and when each connection closed. */
  async function silentServer() {
    const received: { path: string; sender: string | undefined; closed: boolean }[] = [];
    let onRequest = () => {};
    const server = createServer((req: IncomingMessage) => {
      const entry = { path: req.url ?? '', sender: req.headers['x-lockkeeper-sender'] as string | undefined, closed: false };
      received.push(entry);
      req.socket.once('close', () => (entry.closed = true));
      onRequest();
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { url, received, arrived: () => new Promise<void>((resolve) => (onRequest = resolve)) };
  }

  it('a read in flight is aborted the instant its epoch ends; the next one is not sent; it named its run', async () => {
    const server = await silentServer();
    const epoch7 = new EpochAuthority({ holder: 'r1', epoch: 7, monotonic: () => 0, deadline: () => Infinity, expired: () => {} });
    let current: LeaseAuthority = epoch7;
    const http = new PageserverHttp({ clock: new VirtualClock(), authority: () => issuingAuthority(() => current) });
    const target = { nodeId: '1', url: server.url };
    const arrived = server.arrived();
    const inFlight = underAuthority(epoch7.forRun('op-1'), () => http.request(target, 'GET', '/v1/tenant/t1/timeline', { retries: 3, timeoutMs: 60_000 }));
    const failed = inFlight.catch((e: unknown) => e);
    await arrived;
    expect(server.received.map((r) => r.sender)).toEqual(['r1@7/run-op-1']);
    // The replica stands by: the epoch ends, and the run's request is aborted with it (not retried).
    current = standbyAuthority('r1');
    epoch7.end('lease lost (taken over or expired)');
    const error = await failed;
    expect(error).toBeInstanceOf(PageserverRequestError);
    expect(error).toMatchObject({ code: 'Unavailable', cancelled: true, attempts: 1 });
    await reached(() => server.received[0]!.closed, 'the connection of the aborted read closed');
    // The same run goes on (a deposed leader's cut-over): a read of it is refused before it is sent.
    await expect(
      underAuthority(epoch7.forRun('op-1'), () => http.request(target, 'GET', '/v1/tenant/t1/timeline', { retries: 0, timeoutMs: 60_000 })),
    ).rejects.toMatchObject({ code: 'Unavailable', message: expect.stringMatching(/r1@7\/run-op-1: no longer the leader/) });
    expect(server.received).toHaveLength(1);
    // What the stand-by reads on its own goes out under its own name.
    const standbyRead = http.request(target, 'GET', '/v1/location_config', { retries: 0, timeoutMs: 60_000 }).catch(() => {});
    await reached(() => server.received.length === 2, "the stand-by's read");
    expect(server.received[1]!.sender).toBe('r1@standby/discovery');
    http.close();
    await standbyRead;
  });

  it("leaderOnlyBackend runs each call under the issuing authority: a deposed run's reads and actions never reach the plugin", async () => {
    const epoch7 = new EpochAuthority({ holder: 'r1', epoch: 7, monotonic: () => 0, deadline: () => Infinity, expired: () => {} });
    let current: LeaseAuthority = epoch7;
    const seen: string[] = [];
    const plugin = {
      name: 'p',
      capabilities: { vms: true, shards: false },
      listNodes: async () => {
        seen.push(`listNodes ${issuingAuthority(() => current).tag()}`);
        return [];
      },
      cordonNode: async () => void seen.push(`cordonNode ${issuingAuthority(() => current).tag()}`),
    } as unknown as ClusterBackend;
    const gated = leaderOnlyBackend(
      plugin,
      () => true,
      () => current,
    );
    await underAuthority(epoch7.forRun('op-1'), async () => {
      await gated.listNodes();
      await gated.cordonNode('n1');
    });
    expect(seen).toEqual(['listNodes r1@7/run-op-1', 'cordonNode r1@7/run-op-1']);
    epoch7.end('lease lost (taken over or expired)');
    current = standbyAuthority('r1');
    await underAuthority(epoch7.forRun('op-1'), async () => {
      await expect(gated.listNodes()).rejects.toThrow(/r1@7\/run-op-1: no longer the leader/);
      await expect(gated.cordonNode('n1')).rejects.toMatchObject({ code: 'Unavailable' });
    });
    // A stand-by's own read (no run) goes on under its stand-by authority.
    await gated.listNodes();
    expect(seen).toEqual(['listNodes r1@7/run-op-1', 'cordonNode r1@7/run-op-1', 'listNodes r1@standby/discovery']);
  });
});

/** Until `condition` holds (a state the server reaches), polled. */
const reached = (condition: () => boolean, what: string) => until(() => (condition() ? true : undefined), what, 10_000, 5);

describe('an endless authority (the sole leader of its own SQLite file)', () => {
  it('is not carried through awaits (no AsyncLocalStorage, so no promise hooks): calls see the current authority; one that can end still is', async () => {
    const sole = new EpochAuthority({ holder: 'sole', epoch: 0, endless: true, monotonic: () => 0, deadline: () => Infinity, expired: () => {} });
    const current = standbyAuthority('now');
    const seen: string[] = [];
    await underAuthority(sole.forRun('op-1'), async () => {
      await Promise.resolve();
      seen.push(issuingAuthority(() => current).tag());
    });
    const epoch7 = new EpochAuthority({ holder: 'r1', epoch: 7, monotonic: () => 0, deadline: () => Infinity, expired: () => {} });
    await underAuthority(epoch7.forRun('op-2'), async () => {
      await Promise.resolve();
      seen.push(issuingAuthority(() => current).tag());
      // Inside an authority that is carried, an endless one is carried too (it replaces it).
      await underAuthority(sole.forRun('op-3'), async () => {
        await Promise.resolve();
        seen.push(issuingAuthority(() => current).tag());
      });
    });
    expect(seen).toEqual(['now@standby/discovery', 'r1@7/run-op-2', 'sole@0/run-op-3']);
  });
});
