import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPrng } from '../../../src/domain/prng.ts';
import { createKubevirtBackend, type KubevirtBackend } from '../../../plugins/kubevirt/index.ts';
import { K8sSim } from '../../../simulators/kubernetes/index.ts';
import { makeSelfSignedCert } from '../../support/self-signed-cert.ts';
import { candidateSelector, DEFAULT_POD_DRAIN_OPTIONS, planPodDrain, type PodDrainOptions } from '../../../src/domain/pods/drain.ts';

/**
 * Issue 26 point 8: the real kubectl as an oracle for Lockkeeper's pod drain plan (k8s:K1–K3,
 * k8s:K6). Seeded random pod layouts on the Kubernetes simulator (served over HTTPS with a
 * throw-away certificate: kubectl sends its token only over TLS); `kubectl drain --dry-run=client`
 * with the flags Lockkeeper's options map to must evict, refuse and skip exactly the pods
 * Lockkeeper's plan does, for the same reasons; `--dry-run=server` (the simulator answers
 * dry-run evictions, 429 where a PDB refuses) must be refused exactly where Lockkeeper's
 * evictions are.
 */
const SDK = '/usr/lib/google-cloud-sdk/bin';
const PREFERRED = join(SDK, 'kubectl.1.32');
function findKubectl(): string | null {
  if (existsSync(PREFERRED)) return PREFERRED;
  const versions = existsSync(SDK) ? readdirSync(SDK).filter((f) => /^kubectl\.1\.\d+$/.test(f)) : [];
  return versions.length ? join(SDK, versions.sort().at(-1)!) : null;
}
const kubectl = findKubectl();
if (!kubectl) console.warn(`NOTICE: no kubectl under ${SDK}: the kubectl oracle (issue 26 point 8) is skipped`);

const run = (args: string[]) =>
  // Asynchronous: the simulator answers kubectl from this very process.
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(kubectl!, args, { timeout: 60_000 }, (e, stdout, stderr) => resolve({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr })),
  );

let tls: { key: string; cert: string };
beforeAll(() => {
  if (!kubectl) return;
  const dir = mkdtempSync(join(tmpdir(), 'lk-kubectl-'));
  makeSelfSignedCert(dir, { commonName: '127.0.0.1', subjectAltName: 'IP:127.0.0.1', keyFile: 'k.pem', certFile: 'c.pem' });
  tls = { key: readFileSync(join(dir, 'k.pem'), 'utf8'), cert: readFileSync(join(dir, 'c.pem'), 'utf8') };
});

let sim: K8sSim | null = null;
let backend: KubevirtBackend | null = null;
afterEach(async () => {
  await backend?.close();
  backend = null;
  await sim?.close();
  sim = null;
});
afterAll(() => {});

/**
 * A random layout on node n1 (and a little on n2): ReplicaSet, StatefulSet and DaemonSet pods,
 * DaemonSet pods whose DaemonSet is gone, unmanaged pods, mirror (static) pods, finished pods,
 * emptyDir volumes; each PDB covers one pod of its own app (minAvailable 1: refuses; maxUnavailable 1: allows).
 */
function layout(s: K8sSim, seed: number): void {
  const rnd = createPrng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  s.addNode('n1');
  s.addNode('n2');
  const count = 5 + Math.floor(rnd() * 8);
  for (let i = 0; i < count; i++) {
    const name = `p${i}`;
    const app = `app-${i}`;
    const kind = pick(['ReplicaSet', 'StatefulSet', 'DaemonSet', 'DaemonSetGone', 'none', 'mirror', 'finished'] as const);
    const emptyDir = rnd() < 0.3;
    const base = { name, nodeName: rnd() < 0.85 ? 'n1' : 'n2', labels: { app }, emptyDir };
    if (kind === 'ReplicaSet' || kind === 'StatefulSet') s.addPod({ ...base, owner: { kind, name: `${app}-owner` } });
    else if (kind === 'DaemonSet') s.addPod({ ...base, owner: { kind, name: `${app}-ds` } });
    else if (kind === 'DaemonSetGone') s.addPod({ ...base, owner: { kind: 'DaemonSet', name: `${app}-gone` }, ownerMissing: true });
    else if (kind === 'mirror') s.addPod({ ...base, annotations: { 'kubernetes.io/config.mirror': `hash-${i}`, 'kubernetes.io/config.source': 'file' } });
    else if (kind === 'finished') s.addPod({ ...base, phase: pick(['Succeeded', 'Failed'] as const) });
    else s.addPod(base);
    if (kind !== 'DaemonSet' && rnd() < 0.35)
      s.addPdb('default', `${app}-pdb`, { matchLabels: { app }, ...(rnd() < 0.5 ? { minAvailable: 1 } : { maxUnavailable: 1 }) });
  }
}

/** Lockkeeper's options as kubectl flags (k8s:K4's mapping). */
function flags(o: PodDrainOptions): string[] {
  return [
    ...(o.ignoreDaemonSets ? ['--ignore-daemonsets'] : []),
    ...(o.deleteEmptyDirData ? ['--delete-emptydir-data'] : []),
    ...(o.force ? ['--force'] : []),
    `--grace-period=${o.gracePeriodSeconds}`,
    `--pod-selector=${candidateSelector(o)}`,
  ];
}

/** kubectl's refusal texts → Lockkeeper's causes. */
function causeOf(line: string): string {
  if (line.includes('Pods with local storage')) return 'EMPTY_DIR';
  if (line.includes('DaemonSet-managed Pods')) return 'DAEMONSET';
  if (/daemonsets\.apps "[^"]+" not found/.test(line)) return 'DAEMONSET_MISSING';
  if (line.includes('Pods that declare no controller')) return 'UNREPLICATED';
  return `UNKNOWN(${line})`;
}

interface Verdicts {
  evict: string[];
  skipDaemonSet: string[];
  refused: Record<string, string[]>;
}

function kubectlVerdicts(out: { stdout: string; stderr: string }): Verdicts {
  const evict = [...out.stdout.matchAll(/^evicting pod (\S+) \(dry run\)$/gm)].map((m) => m[1]!).sort();
  const warning = /^Warning: (.*)$/m.exec(out.stderr)?.[1] ?? '';
  const ignored = /ignoring DaemonSet-managed Pods: ([^;]+)/.exec(warning)?.[1] ?? '';
  const refused: Record<string, string[]> = {};
  const pending = out.stderr.split('There are pending nodes to be drained:\n n1\n')[1] ?? '';
  for (const line of pending.split('\n').filter((l) => l.startsWith('cannot delete'))) {
    const pods = line.slice(line.lastIndexOf(': ') + 2).split(', ');
    refused[causeOf(line)] = pods.sort();
  }
  return { evict, skipDaemonSet: ignored ? ignored.split(', ').sort() : [], refused };
}

async function lockkeeperVerdicts(o: PodDrainOptions): Promise<Verdicts> {
  const plan = planPodDrain(await backend!.podDrain.listNodePods('n1', candidateSelector(o)), o, Date.now());
  const id = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;
  const refused: Record<string, string[]> = {};
  for (const b of plan.blockers) refused[b.cause] = [...b.pods].sort();
  const blocked = plan.blockers.length > 0;
  return {
    // kubectl evicts nothing when any pod refuses the drain; neither does Lockkeeper (k8s:K3).
    evict: blocked
      ? []
      : plan.pods
          .filter((p) => p.verdict.action === 'EVICT')
          .map(id)
          .sort(),
    skipDaemonSet: blocked
      ? []
      : plan.pods
          .filter((p) => p.verdict.action === 'SKIP' && p.verdict.why === 'DAEMONSET')
          .map(id)
          .sort(),
    refused,
  };
}

const SEEDS = [1, 2, 3, 4, 5, 6];

/** What a drain would change: the node's cordon, the pods on it and whether any is being deleted, the budgets' allowances. */
const untouched = (s: K8sSim) => ({
  cordoned: s.node('n1')!.spec?.unschedulable ?? false,
  pods: s.podsOn('n1').map((p) => `${p.metadata.name}${p.metadata.deletionTimestamp ? ' (deleting)' : ''}`),
  budgets: s.store.list(s.def('poddisruptionbudgets', 'policy')).map((b) => `${b.metadata.name}: ${b.status?.disruptionsAllowed}`),
});

describe.skipIf(!kubectl)('kubectl drain as an oracle for the pod drain plan (issue 26 point 8)', () => {
  it('records the kubectl used', async () => {
    const { stdout } = await run(['version', '--client', '-o', 'json']);
    const version = JSON.parse(stdout).clientVersion.gitVersion as string;
    console.info(`kubectl oracle: ${kubectl} ${version}`);
    expect(version).toMatch(/^v1\.\d+\.\d+/);
  });

  for (const seed of SEEDS)
    it(`seed ${seed}: --dry-run=client evicts, refuses and skips what Lockkeeper's plan does, for every mix of the three options`, async () => {
      sim = await K8sSim.start({ tls, msPerGraceSecond: 1 });
      layout(sim, seed);
      backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile() });
      const before = untouched(sim);
      const rnd = createPrng(seed * 7919);
      for (let round = 0; round < 3; round++) {
        const o: PodDrainOptions = { ...DEFAULT_POD_DRAIN_OPTIONS, ignoreDaemonSets: rnd() < 0.6, deleteEmptyDirData: rnd() < 0.6, force: rnd() < 0.6 };
        const out = await run(['--kubeconfig', sim.kubeconfigFile(), 'drain', 'n1', '--dry-run=client', ...flags(o)]);
        const theirs = kubectlVerdicts(out);
        const ours = await lockkeeperVerdicts(o);
        expect(ours, `seed ${seed} options ${JSON.stringify(o)}\n${out.stdout}\n${out.stderr}`).toEqual(theirs);
        expect(out.code).toBe(Object.keys(theirs.refused).length ? 1 : 0);
      }
      // A client dry run changes nothing.
      expect(untouched(sim)).toEqual(before);
    }, 120_000);

  for (const seed of SEEDS)
    it(`seed ${seed}: --dry-run=server is refused (429, a PDB) exactly for the pods Lockkeeper's evictions are refused for`, async () => {
      sim = await K8sSim.start({ tls, msPerGraceSecond: 1 });
      layout(sim, seed);
      backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile() });
      const o = DEFAULT_POD_DRAIN_OPTIONS;
      const before = untouched(sim);
      // --timeout: kubectl reports the refusal instead of retrying for ever.
      const out = await run(['--kubeconfig', sim.kubeconfigFile(), 'drain', 'n1', '--dry-run=server', '--timeout=2s', ...flags(o)]);
      const refusedByKubectl = [
        ...new Set(
          [
            ...out.stderr.matchAll(
              /error when evicting pods\/"([^"]+)" -n "([^"]+)" \(will retry after 5s\): Cannot evict pod as it would violate the pod's disruption budget/g,
            ),
          ].map((m) => `${m[2]}/${m[1]}`),
        ),
      ].sort();
      // Nothing changed: the cordon and the evictions were dry runs.
      expect(untouched(sim)).toEqual(before);
      const plan = planPodDrain(await backend.podDrain.listNodePods('n1', candidateSelector(o)), o, Date.now());
      const refusedByLockkeeper: string[] = [];
      for (const p of plan.pods.filter((e) => e.verdict.action === 'EVICT')) {
        const answer = await backend.podDrain.evictPod({ namespace: p.namespace, name: p.name }, o.gracePeriodSeconds);
        if (answer.kind === 'BLOCKED') refusedByLockkeeper.push(`${p.namespace}/${p.name}`);
      }
      expect(refusedByLockkeeper.sort(), `seed ${seed}\n${out.stderr}`).toEqual(refusedByKubectl);
      expect(out.code).toBe(refusedByKubectl.length ? 1 : 0);
    }, 120_000);
});
