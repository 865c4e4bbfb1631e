import { afterEach, describe, expect, it } from 'vitest';
import { K8sSim } from '../../../simulators/kubernetes/index.ts';
import { eventually } from '../../support/kubevirt-app.ts';

/** The simulator is strict where kube-apiserver is; these pin that down (plain fetch, no client). */
let sim: K8sSim;
afterEach(async () => {
  await sim?.close();
});

async function req(method: string, path: string, body?: unknown, contentType = 'application/json') {
  const res = await fetch(sim.url + path, {
    method,
    headers: { authorization: `Bearer ${sim.token}`, 'content-type': contentType },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const VMS = '/apis/kubevirt.io/v1/namespaces/default/virtualmachines';

describe('Kubernetes API simulator', () => {
  it('answers Status objects: 401 without the token, 404 for unknown kinds and objects', async () => {
    sim = await K8sSim.start({ longhorn: false });
    expect((await fetch(`${sim.url}/api/v1/nodes`)).status).toBe(401);
    const crd = await req('GET', '/apis/longhorn.io/v1beta2/namespaces/longhorn-system/replicas');
    expect(crd).toMatchObject({ status: 404, body: { kind: 'Status', reason: 'NotFound', code: 404 } });
    expect((await req('GET', '/api/v1/nodes/nope')).body).toMatchObject({ kind: 'Status', reason: 'NotFound', message: 'nodes "nope" not found' });
  });

  it('409 on a stale resourceVersion (PUT or patch), 415 for unknown patch types and strategic merge on CRDs', async () => {
    sim = await K8sSim.start();
    sim.addVm({ name: 'vm' });
    const vm = (await req('GET', `${VMS}/vm`)).body;
    const stale = vm.metadata.resourceVersion;
    expect((await req('PATCH', `${VMS}/vm`, { metadata: { labels: { a: 'b' } } }, 'application/merge-patch+json')).status).toBe(200);
    expect((await req('PUT', `${VMS}/vm`, vm)).body).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(
      (await req('PATCH', `${VMS}/vm`, { metadata: { resourceVersion: stale }, spec: { runStrategy: 'Always' } }, 'application/merge-patch+json')).status,
    ).toBe(409);
    expect((await req('PATCH', `${VMS}/vm`, {}, 'application/json')).status).toBe(415);
    expect((await req('PATCH', `${VMS}/vm`, {}, 'application/strategic-merge-patch+json')).status).toBe(415);
    const jp = await req('PATCH', `${VMS}/vm`, [{ op: 'replace', path: '/spec/runStrategy', value: 'Manual' }], 'application/json-patch+json');
    expect(jp.body.spec.runStrategy).toBe('Manual');
    sim.addNode('n1');
    const smp = await req('PATCH', '/api/v1/nodes/n1', { spec: { unschedulable: true } }, 'application/strategic-merge-patch+json');
    expect(smp.body.spec.unschedulable).toBe(true);
  });

  it('label selectors on lists', async () => {
    sim = await K8sSim.start();
    sim.addVm({ name: 'a', labels: { app: 'web', tier: '1' } });
    sim.addVm({ name: 'b', labels: { app: 'db' } });
    const names = async (sel: string) => (await req('GET', `${VMS}?labelSelector=${encodeURIComponent(sel)}`)).body.items.map((i: any) => i.metadata.name);
    expect(await names('app=web')).toEqual(['a']);
    expect(await names('app!=web')).toEqual(['b']);
    expect(await names('app in (web,db),!tier')).toEqual(['b']);
    expect(await names('tier')).toEqual(['a']);
  });

  it('watches: events after a resourceVersion, bookmarks, and 410 Gone (ERROR event) for a compacted one', async () => {
    sim = await K8sSim.start({ bookmarkIntervalMs: 20 });
    sim.addNode('n1');
    const list = (await req('GET', '/api/v1/nodes')).body;
    const rv = list.metadata.resourceVersion;
    sim.store.mutate(sim.def('nodes'), undefined, 'n1', (n) => (n.spec = { unschedulable: true }));
    const controller = new AbortController();
    const res = await fetch(`${sim.url}/api/v1/nodes?watch=true&allowWatchBookmarks=true&resourceVersion=${rv}`, {
      headers: { authorization: `Bearer ${sim.token}` },
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('BOOKMARK')) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const events = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ type: 'MODIFIED', object: { spec: { unschedulable: true } } });
    expect(events.some((e) => e.type === 'BOOKMARK')).toBe(true);

    sim.store.compact();
    const gone = await (await fetch(`${sim.url}/api/v1/nodes?watch=true&resourceVersion=${rv}`, { headers: { authorization: `Bearer ${sim.token}` } })).text();
    expect(JSON.parse(gone.trim())).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
  });

  it('controllers: Halted deletes the VMI; a run strategy starts it on a fitting node; migration of a non-migratable VMI fails with the reason', async () => {
    sim = await K8sSim.start();
    sim.addNode('n1', { labels: { gpu: 'yes' } });
    sim.addNode('n2');
    sim.addVm({ name: 'g', nodeName: 'n1', gpu: true, nodeSelector: { gpu: 'yes' } });
    await req('PATCH', `${VMS}/g`, { spec: { runStrategy: 'Halted' } }, 'application/merge-patch+json');
    await eventually(() => sim.vmi('default', 'g') === null && sim.vm('default', 'g')!.status.printableStatus === 'Stopped');
    await req('PATCH', `${VMS}/g`, { spec: { runStrategy: 'Always' } }, 'application/merge-patch+json');
    await eventually(() => sim.vmi('default', 'g')?.status.nodeName === 'n1');
    const created = await req('POST', '/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations', {
      metadata: { name: 'm1' },
      spec: { vmiName: 'g' },
    });
    expect(created.status).toBe(201);
    await eventually(() => sim.migrations('default')[0]?.status?.phase === 'Failed');
    expect(sim.migrations('default')[0]!.status.migrationState.failureReason).toMatch(/^HostDeviceNotLiveMigratable/);
    expect(sim.vmi('default', 'g')!.status.nodeName).toBe('n1');
  });
});
