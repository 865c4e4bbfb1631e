/**
 * The crash and fault campaigns (issue 16 points 1–2). Each round runs one task (a VM
 * maintenance enable/disable, a storage drain then fill, or a rollout maintaining two nodes) on a hyperconverged durable
 * simulated cluster, then lets the run quiesce and checks the invariants
 * (invariants.ts). Crash: one `kill -9` per round at a seeded random instant, then a restart
 * on the same database and cluster. Faults: no kills; 10 % of every backend action fails
 * transiently and 5 % take ten times their latency. Every choice comes from the seed, which
 * is printed, so a campaign replays (the instants are the same; what is in flight at each
 * depends on the machine's speed).
 */
import { createPrng } from '../src/domain/prng.ts';
import { createCampaignCluster, NODES } from './cluster.ts';
import { Driver, type Task } from './driver.ts';
import { computeMismatches, createPageserverCampaignCluster, findPageserverViolations, PAGESERVER_NODES, unsettledLocations } from './pageserver-cluster.ts';
import { findViolations, readDatabase, viewCluster, type Ledger } from './invariants.ts';
import { findBudgetViolations, findCutOverOrderViolations } from './order-invariants.ts';
import { findOfflineIntentViolations, findTenantConfigViolations, heldLocations, logPlacementWrites, readIntentDatabase } from './intent-invariants.ts';

export interface CampaignOptions {
  mode: 'crash' | 'faults';
  /** `fake`: the durable simulated cluster (default); `pageserver`: the real pageserver plugin on the pageserver simulators and compute hook. */
  backend?: 'fake' | 'pageserver';
  seed: number;
  rounds: number;
  /** Latest kill instant after a task starts (crash). */
  maxKillDelayMs: number;
  log: (line: string) => void;
  /** Run the gateway with this seeded mutant (mutant-hooks.mjs): the campaign must then report its violation. */
  mutant?: string;
}

export interface CampaignResult {
  rounds: number;
  clean: number;
  kills: number;
  operations: number;
  /** Operations that ended with every failure named (a FAILED operation or step with its error). */
  operationsNamed: number;
  /** Steps that ended FAILED (each must name its error). */
  stepsFailed: number;
  /** The pageserver fault campaign: faults its simulators and hook injected. */
  faultsInjected?: { failures: number; spikes: number };
  violations: string[];
}

const TASK_DEADLINE_MS = 600_000;
/** How long the computes may take to be told the final locations, and the pageservers to hold them, after a run quiesced (a few background reconcile periods). */
const RECONCILE_GRACE_MS = 20_000;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The restart of a fake rollout, from the draw that chose the rollout (pick in [0.8, 1)), so that a seed's other draws stay as they were. */
function fakeRolloutRestart(pick: number): 'NONE' | 'WAIT_FOR_REATTACH' | 'CONFIRM' {
  return pick < 0.8 + 0.2 / 3 ? 'NONE' : pick < 0.8 + 0.4 / 3 ? 'WAIT_FOR_REATTACH' : 'CONFIRM';
}

export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const { mode, seed, rounds, log } = options;
  const backend = options.backend ?? 'fake';
  const random = createPrng(seed);
  const { mutant } = options;
  const ps = backend === 'pageserver' ? await createPageserverCampaignCluster({ ...(mode === 'faults' && { faultSeed: seed }), mutant }) : undefined;
  const cluster = ps ?? createCampaignCluster({ seed, ...(mode === 'faults' && { latencySpike: { rate: 0.05, factor: 10 } }), mutant });
  const nodes = ps ? PAGESERVER_NODES : NODES;
  log(`${mode} campaign (${backend} backend${mutant ? `, mutant ${mutant}` : ''}), seed ${seed}, ${rounds} round(s), in ${cluster.dir}`);
  const result: CampaignResult = { rounds, clean: 0, kills: 0, operations: 0, operationsNamed: 0, stepsFailed: 0, violations: [] };
  try {
    await cluster.start();
    if (ps) logPlacementWrites(cluster.dbPath);
    const ledger: Ledger = { initialRunStrategy: new Map(), startedOperations: new Set(), namedFailures: new Set() };
    const driver = new Driver(cluster, ledger, log, ps && ((id) => ps.restartNode(id)));
    const initial = await viewCluster(cluster.gateway!.url);
    for (const vm of initial.vms.values()) ledger.initialRunStrategy.set(vm.id, vm.runStrategy);
    // The pageserver simulators and the hook inject theirs themselves (createPageserverCampaignCluster).
    if (mode === 'faults' && !ps) {
      await driver.gql(
        'mutation { simulation { injectFaults(input: { failureRate: { migrate: 0.1, stop: 0.1, start: 0.1, cutOver: 0.1, cordon: 0.1 } }) { __typename } } }',
      );
    }
    // Where the previous round's checks ended: each round checks the order of its own cut-overs and rollout steps.
    let logFrom = 0;
    let eventsFrom = 0;
    let writesFrom = 0;
    for (let round = 1; round <= rounds; round++) {
      // Fake backend: 40 % maintenance, 40 % drain and fill, 20 % a MAINTENANCE rollout of two nodes
      // (restart NONE, WAIT_FOR_REATTACH or CONFIRM, a third each); pageserver: 75 % drain, restart
      // and fill, 25 % a DRAIN_FILL rollout of two nodes with restarts (WAIT_FOR_REATTACH).
      const pick = random();
      const kind = ps ? (pick < 0.75 ? 'drainFill' : 'rollout') : pick < 0.4 ? 'maintain' : pick < 0.8 ? 'drainFill' : 'rollout';
      const n = Math.floor(random() * nodes.length);
      const task: Task =
        kind === 'rollout'
          ? {
              kind,
              action: ps ? 'DRAIN_FILL' : 'MAINTENANCE',
              restart: ps ? 'WAIT_FOR_REATTACH' : fakeRolloutRestart(pick),
              nodeId: nodes[n]!,
              secondNodeId: nodes[(n + 1) % nodes.length]!,
              // Not drawn: the seeds' other draws stay as they were.
              heldNodeId: nodes[(n + 2) % nodes.length]!,
            }
          : { kind, nodeId: nodes[n]! };
      const killAfterMs = Math.round(random() * options.maxKillDelayMs);
      const deadline = Date.now() + TASK_DEADLINE_MS;
      let killed: Promise<void> | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      if (mode === 'crash') {
        timer = setTimeout(() => {
          killed = (async () => {
            await cluster.kill();
            result.kills++;
            await cluster.start();
          })();
        }, killAfterMs);
      }
      const done = await driver.run(task, deadline);
      clearTimeout(timer);
      if (mode === 'crash' && !killed) {
        // The task ended before its instant: the kill still comes, now, on an idle gateway.
        killed = (async () => {
          await cluster.kill();
          result.kills++;
          await cluster.start();
        })();
      }
      await killed;
      const quiet = await driver.quiesce(deadline);
      const db = readDatabase(cluster.dbPath);
      const view = await viewCluster(cluster.gateway!.url);
      const found = findViolations(view, db, ledger);
      found.push(...findBudgetViolations(db.events, eventsFrom));
      eventsFrom = (db.events.at(-1)?.seq ?? 0) + 1;
      if (ps) {
        // A notification a kill cut off is sent again by the resumed gateway, and a location it left
        // AttachedStale is made Secondary, and a location whose tenant config differs is sent it again
        // (neon:W11), by its background reconcile: wait for these (bounded), then check.
        const configsDiffer = () => findTenantConfigViolations(readIntentDatabase(cluster.dbPath).shards, heldLocations(ps.fleet)).length;
        const unsettled = () => computeMismatches(ps).length + unsettledLocations(ps).length + configsDiffer();
        for (const until = Date.now() + RECONCILE_GRACE_MS; unsettled() && Date.now() < until;) await pause(250);
        found.push(...findPageserverViolations(ps, view));
        found.push(...findCutOverOrderViolations(ps.fleet.log.entries, logFrom));
        const intents = readIntentDatabase(cluster.dbPath);
        found.push(...findTenantConfigViolations(intents.shards, heldLocations(ps.fleet)));
        found.push(...findOfflineIntentViolations(intents.writes, intents.availability, writesFrom));
        writesFrom = (intents.writes.at(-1)?.seq ?? 0) + 1;
        logFrom = ps.fleet.log.position;
      }
      if (!done || !quiet) found.push(`task ${task.kind}(node ${task.nodeId}) did not finish and quiesce`);
      if (found.length === 0) result.clean++;
      result.violations.push(...found.map((v) => `round ${round}: ${v}`));
      log(
        `round ${round}/${rounds}: ${task.kind}(${task.kind === 'rollout' ? `${task.action}, restart ${task.restart}, ` : ''}node ${task.nodeId}${task.kind === 'rollout' ? `, node ${task.secondNodeId}` : ''})${mode === 'crash' ? `, kill at +${killAfterMs} ms` : ''}: ${found.length ? `${found.length} violation(s)` : 'clean'}`,
      );
      for (const v of found) log(`  ${v}`);
    }
    const db = readDatabase(cluster.dbPath);
    result.operations = db.operations.length;
    result.stepsFailed = db.steps.filter((s) => s.state === 'FAILED').length;
    if (ps && mode === 'faults') result.faultsInjected = { ...ps.faults };
    const failedSteps = new Map<string, number>();
    for (const s of db.steps) if (s.state === 'FAILED' && !s.error) failedSteps.set(s.operationId, (failedSteps.get(s.operationId) ?? 0) + 1);
    result.operationsNamed = db.operations.filter((o) => (o.state !== 'FAILED' || o.error) && !failedSteps.has(o.id) && o.state !== 'RUNNING').length;
  } finally {
    await cluster.stop();
  }
  return result;
}
