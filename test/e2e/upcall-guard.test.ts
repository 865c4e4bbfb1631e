/**
 * neon:L10 (issue 27 point 4): the upcall listener is as guarded as the API. Beyond loopback
 * it refuses to start without `upcall.token` unless the gateway's explicit insecure opt-in
 * is set (then it logs so); every re-attach and validate is recorded (event and audit, with
 * the caller's address and the node); re-attaches of one node are rate-limited.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster } from '../support/pageserver-cluster.ts';
import { pageserverWorlds, type World } from '../support/pageserver-e2e.ts';

const clusters = closeAfterEach(afterEach);
const { setUp } = pageserverWorlds(afterEach);
const SHARD: SimShardSpec = { tenant: 4, attached: 1, secondaries: [2], generation: 3 };
const ID = shardIdOf(SHARD);
const TOKEN = 'upcall-secret';

async function upcall(w: World, path: string, body: unknown, token?: string) {
  const res = await w.cluster.drive(
    fetch(`${w.backend.upcallUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
      body: JSON.stringify(body),
    }),
  );
  return { status: res.status, json: (await res.json()) as { msg?: string } };
}

async function upcallEvents(w: World) {
  await w.app.operations.journal.flush();
  const rows = await w.cluster.db.prisma.event.findMany({ where: { type: { startsWith: 'UPCALL_' } }, orderBy: { seq: 'asc' } });
  return rows.map((r) => ({
    type: r.type,
    nodeId: r.nodeId,
    ...(JSON.parse(r.payload) as { caller: string; outcome: string; status: number; detail: string }),
  }));
}

describe('neon:L10 — upcalls as guarded as the API', { timeout: 120_000 }, () => {
  it('refuses to start listening beyond loopback without upcall.token; with the insecure opt-in it starts and says so', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }], shards: [SHARD] }));
    await expect(c.startController({ upcall: { host: '0.0.0.0', port: 0 } })).rejects.toThrow(
      /refusing to listen for pageserver upcalls on 0\.0\.0\.0 without upcall\.token/,
    );
    const lines: string[] = [];
    const log = { info: () => {}, warn: (_obj: object, msg?: string) => void lines.push(msg ?? '') };
    await c.startController({ upcall: { host: '0.0.0.0', port: 0 } }, { insecure: true, log });
    expect(lines.some((l) => l.includes('INSECURE: pageserver upcalls on 0.0.0.0 without upcall.token'))).toBe(true);
  });

  it('a re-attach without the token answers 401 and changes nothing; it is recorded with the caller’s address', async () => {
    const w = await setUp({ nodes: [{ id: 1 }, { id: 2 }], shards: [SHARD] }, { plugin: { upcall: { host: '127.0.0.1', port: 0, token: TOKEN } } });
    const before = w.backend.generationOf(ID);
    const refused = await upcall(w, '/upcall/v1/re-attach', { node_id: 1 });
    expect(refused.status).toBe(401);
    expect(w.backend.generationOf(ID)).toBe(before);
    expect((await upcall(w, '/upcall/v1/re-attach', { node_id: 1 }, 'wrong')).status).toBe(401);
    expect(w.backend.generationOf(ID)).toBe(before);
    const events = await upcallEvents(w);
    expect(events.map((e) => [e.type, e.outcome, e.status])).toEqual([
      ['UPCALL_RE_ATTACH', 'UNAUTHORIZED', 401],
      ['UPCALL_RE_ATTACH', 'UNAUTHORIZED', 401],
    ]);
    expect(events[0]!.caller).toMatch(/^(::ffff:)?127\.0\.0\.1:\d+$/);
    const audit = await w.cluster.db.prisma.auditEntry.findMany({ where: { action: 'upcall re-attach' } });
    expect(audit.map((a) => a.outcome)).toEqual(['UNAUTHORIZED', 'UNAUTHORIZED']);
    // With the token: answered, recorded with the node, and validate too.
    expect((await upcall(w, '/upcall/v1/re-attach', { node_id: 1 }, TOKEN)).status).toBe(200);
    expect(w.backend.generationOf(ID)).toBe(before! + 1);
    expect((await upcall(w, '/upcall/v1/validate', { tenants: [{ id: ID, gen: before! + 1 }] }, TOKEN)).status).toBe(200);
    const after = await upcallEvents(w);
    expect(after.slice(2).map((e) => [e.type, e.nodeId, e.outcome, e.detail])).toEqual([
      ['UPCALL_RE_ATTACH', '1', 'OK', '1 generation(s) bumped, 1 location(s) answered'],
      // Neon's validate body names no node, and both simulated pageservers listen on 127.0.0.1: the caller's address is all there is.
      ['UPCALL_VALIDATE', null, 'OK', '1 generation(s) checked, 0 not valid'],
    ]);
  });

  it('a flood of re-attaches of one node is limited (429) and named; generations stop moving', async () => {
    const w = await setUp({ nodes: [{ id: 1 }, { id: 2 }], shards: [SHARD] }, { plugin: { upcall: { host: '127.0.0.1', port: 0, token: TOKEN } } });
    const before = w.backend.generationOf(ID)!;
    const statuses: number[] = [];
    let last: { msg?: string } = {};
    for (let i = 0; i < 15; i++) {
      const r = await upcall(w, '/upcall/v1/re-attach', { node_id: 1 }, TOKEN);
      statuses.push(r.status);
      last = r.json;
    }
    expect(statuses).toEqual([...Array(10).fill(200), ...Array(5).fill(429)]);
    expect(last.msg).toMatch(/^Too Many Requests: re-attach of node 1 rate-limited: 10 in the last 60 s/);
    expect(w.backend.generationOf(ID)).toBe(before + 10);
    const limited = (await upcallEvents(w)).filter((e) => e.outcome === 'RATE_LIMITED');
    expect(limited).toHaveLength(5);
    expect(limited[0]).toMatchObject({ type: 'UPCALL_RE_ATTACH', nodeId: '1', status: 429 });
    // The window passes: node 1 may re-attach again.
    await w.cluster.advance(60_000, 1_000);
    expect((await upcall(w, '/upcall/v1/re-attach', { node_id: 1 }, TOKEN)).status).toBe(200);
  });
});
