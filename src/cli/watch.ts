import cliProgress from 'cli-progress';
import { EXIT, type GatewayClient } from './client.ts';
import { DOCUMENTS } from './documents.ts';
import { stamp, type CliIo } from './output.ts';

interface Progress {
  operation: {
    id: string;
    kind: string;
    nodeId: string | null;
    state: string;
    error: string | null;
    etaSeconds: number | null;
    counts: { moved: number; stopped: number; skipped: number; failed: number; total: number };
    waitingOn: { kind: string; description: string } | null;
    rollout: { currentWave: number | null; nodesDone: number; nodesTotal: number } | null;
    remaining: { kind: string; id: string; reason: string; message: string }[] | null;
  };
  steps: { workloadKind: string; workloadId: string; state: string; reason: string | null; error: string | null }[];
}

const ENDED = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

/** rollout:T5: how a watched operation ended, as an exit code; a success that left workloads on its node is not "done" for a restart. */
function exitCodeOf(state: string, remaining: number): number {
  if (state === 'SUCCEEDED') return remaining ? EXIT.NOT_SAFE_TO_RESTART : EXIT.DONE;
  if (state === 'PAUSED') return EXIT.PAUSED;
  return EXIT.ENDED_BADLY;
}

const eta = (s: number | null) =>
  s === null
    ? '--'
    : s >= 3600
      ? `${Math.floor(s / 3600)}h${Math.round((s % 3600) / 60)}m`
      : s >= 60
        ? `${Math.floor(s / 60)}m${Math.round(s % 60)}s`
        : `${Math.round(s)}s`;

/**
 * rollout:T4: follows an operation over graphql-ws to its end (or, for a rollout, to a
 * pause): a progress bar with counts, ETA and the waiting-on line on a terminal; plain
 * timestamped lines otherwise; one line per failed or skipped workload; `--json` one
 * line per change. Returns the exit code (rollout:T5).
 */
export async function watchOperation(client: GatewayClient, id: string, io: CliIo, options: { json: boolean }): Promise<number> {
  let final = 'RUNNING';
  let remaining = 0;
  let lastLine = '';
  const bars =
    io.isTTY && !options.json
      ? new cliProgress.MultiBar(
          {
            stream: io.stream,
            format: '{label} [{bar}] {value}/{total} {unit} | ETA {remaining} | {state}{waiting}',
            hideCursor: true,
            clearOnComplete: false,
            forceRedraw: true,
            noTTYOutput: false,
          },
          cliProgress.Presets.shades_classic,
        )
      : null;
  let bar: cliProgress.SingleBar | null = null;
  try {
    await client.subscribe<{ operationProgress: Progress }>(DOCUMENTS.progress, { id }, ({ operationProgress: p }) => {
      const op = p.operation;
      const rollout = op.kind === 'ROLLOUT';
      const done = op.counts.moved + op.counts.stopped + op.counts.skipped + op.counts.failed;
      const unit = rollout ? 'nodes' : op.kind === 'MAINTENANCE' ? 'workloads' : 'shards';
      const label = `${op.kind.toLowerCase()}${op.nodeId ? ` ${op.nodeId}` : ''}${rollout && op.rollout?.currentWave ? ` wave ${op.rollout.currentWave}` : ''}`;
      if (options.json) io.out(`${JSON.stringify(p)}\n`);
      for (const s of p.steps) {
        if (s.state !== 'FAILED' && s.state !== 'SKIPPED') continue;
        const line = `${s.state.toLowerCase()} ${s.workloadKind} ${s.workloadId}: ${s.reason ?? ''}${s.error ? ` (${s.error})` : ''}`;
        if (bars) bars.log(`${line}\n`);
        else if (!options.json) io.out(`${stamp(io.now())} ${line}\n`);
      }
      const waiting = op.waitingOn ? ` | waiting on ${op.waitingOn.description}` : '';
      if (bars) {
        bar ??= bars.create(op.counts.total, done, { label, unit, remaining: eta(op.etaSeconds), state: op.state, waiting });
        bar.setTotal(op.counts.total);
        bar.update(done, { label, unit, remaining: eta(op.etaSeconds), state: op.state, waiting });
      } else if (!options.json) {
        const line = `${label} ${op.state} ${done}/${op.counts.total} ${unit} (${op.counts.moved} done, ${op.counts.stopped ? `${op.counts.stopped} stopped, ` : ''}${op.counts.skipped} skipped, ${op.counts.failed} failed) eta ${eta(op.etaSeconds)}${waiting}`;
        if (line !== lastLine) io.out(`${stamp(io.now())} ${line}\n`);
        lastLine = line;
      }
      final = op.state;
      if (ENDED.includes(op.state) || (rollout && op.state === 'PAUSED')) {
        const report = (line: string) => (bars ? bars.log(`${line}\n`) : io.out(`${stamp(io.now())} ${line}\n`));
        remaining = op.remaining?.length ?? 0;
        if (!options.json) {
          if (op.error) report(`error: ${op.error}`);
          if (op.remaining?.length) {
            report(`node ${op.nodeId} is NOT safe to restart: ${op.remaining.length} workload(s) remain`);
            for (const w of op.remaining) report(`  ${w.kind.toLowerCase()} ${w.id}: ${w.reason}: ${w.message}`);
          } else if (op.remaining) report(`node ${op.nodeId} is safe to restart: nothing remains on it`);
        }
        return true;
      }
      return false;
    });
  } finally {
    bars?.stop();
  }
  if (final === 'PAUSED' && !options.json) io.err(`rollout ${id} is PAUSED and needs a person: resume, continue or cancel it\n`);
  return exitCodeOf(final, remaining);
}
