import type { GenericFormatter, MultiBar, SingleBar } from 'cli-progress';
import { etaText, formatDuration, type EtaFields } from '../domain/durations.ts';
import { EXIT, type GatewayClient } from './client.ts';
import { DOCUMENTS } from './documents.ts';
import { stamp, type CliIo } from './output.ts';

interface Progress {
  operation: EtaFields & {
    id: string;
    kind: string;
    nodeId: string | null;
    state: string;
    error: string | null;
    createdAt: string;
    finishedAt: string | null;
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

/** The terminal's width: the stream's, else $COLUMNS, else 80. */
const columnsOf = (io: CliIo) => (io.stream as { columns?: number }).columns || Number(io.env.COLUMNS) || 80;

/**
 * One progress line that fits `columns`: the bar shrinks first (to 10 cells), then the
 * waiting-on text is cut with an ellipsis, so nothing wraps or is clipped mid-word by the
 * terminal (issue 30, point 2).
 */
function progressLine(columns: number, p: { label: string; value: number; total: number; unit: string; eta: string; state: string; waiting: string }): string {
  const head = `${p.label} [`;
  const tail = `] ${p.value}/${p.total} ${p.unit} | ETA ${p.eta} | ${p.state}`;
  const room = columns - 1 - head.length - tail.length;
  const size = Math.max(10, Math.min(40, room - p.waiting.length));
  const filled = p.total > 0 ? Math.round((size * Math.min(p.value, p.total)) / p.total) : 0;
  let line = `${head}${'█'.repeat(filled)}${'░'.repeat(size - filled)}${tail}`;
  const left = columns - 1 - line.length;
  if (p.waiting && left > 0) line += p.waiting.length <= left ? p.waiting : `${p.waiting.slice(0, Math.max(0, left - 1))}…`;
  return line.length > columns - 1 ? `${line.slice(0, columns - 2)}…` : line;
}

/** The last line of a watch: how it ended, in how long, and the counts. */
function summaryLine(op: Progress['operation'], label: string, unit: string, done: number): string {
  const took = op.finishedAt ? ` in ${formatDuration((Date.parse(op.finishedAt) - Date.parse(op.createdAt)) / 1000)}` : '';
  const c = op.counts;
  return `${label} ${op.state}${took}: ${done}/${c.total} ${unit} (${c.moved} done, ${c.stopped ? `${c.stopped} stopped, ` : ''}${c.skipped} skipped, ${c.failed} failed)`;
}

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
  let bars: MultiBar | null = null;
  if (io.isTTY && !options.json) {
    const { MultiBar } = (await import('cli-progress')).default;
    // Drawn by progressLine (fits the width); the ETA ages between updates (etaText's elapsed).
    const format: GenericFormatter = (_options, params, payload: { line: (elapsed: number) => string; at: number }) =>
      payload.line ? payload.line((Date.now() - payload.at) / 1000) : `${params.value}/${params.total}`;
    bars = new MultiBar({ stream: io.stream, format, hideCursor: true, clearOnComplete: false, forceRedraw: true, noTTYOutput: false, fps: 2 });
  }
  let bar: SingleBar | null = null;
  let summary = '';
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
      const running = !ENDED.includes(op.state);
      if (bars) {
        const at = Date.now();
        const columns = columnsOf(io);
        const payload = {
          at,
          line: (elapsed: number) =>
            progressLine(columns, { label, value: done, total: op.counts.total, unit, eta: running ? etaText(op, elapsed) : '--', state: op.state, waiting }),
        };
        bar ??= bars.create(op.counts.total, done, payload);
        bar.setTotal(op.counts.total);
        bar.update(done, payload);
      } else if (!options.json) {
        const line = `${label} ${op.state} ${done}/${op.counts.total} ${unit} (${op.counts.moved} done, ${op.counts.stopped ? `${op.counts.stopped} stopped, ` : ''}${op.counts.skipped} skipped, ${op.counts.failed} failed)${running ? ` eta ${etaText(op)}` : ''}${waiting}`;
        if (line !== lastLine) io.out(`${stamp(io.now())} ${line}\n`);
        lastLine = line;
      }
      final = op.state;
      if (ENDED.includes(op.state) || (rollout && op.state === 'PAUSED')) {
        const report = (line: string) => (bars ? bars.log(`${line}\n`) : io.out(`${stamp(io.now())} ${line}\n`));
        remaining = op.remaining?.length ?? 0;
        summary = summaryLine(op, label, unit, done);
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
  if (summary && !options.json) io.out(`${bars ? '' : `${stamp(io.now())} `}${summary}\n`);
  if (final === 'PAUSED' && !options.json) io.err(`rollout ${id} is PAUSED and needs a person: resume, continue or cancel it\n`);
  return exitCodeOf(final, remaining);
}
