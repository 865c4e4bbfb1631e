/**
 * `npm run campaign -- crash|faults [--backend fake|pageserver] [--seed N] [--rounds N] [--max-kill-delay-ms N] [--mutant NAME]`: the
 * crash and fault campaigns of issue 16 (a tool like the benchmarks, not part of `npm test`;
 * a two-round smoke test is). Prints one line per round and a summary with the seed; exits
 * 1 when any round found a violation. `--mutant` runs the gateway with a seeded mutant
 * (mutant-hooks.mjs) to show that the invariants catch it: such a run is meant to fail.
 */
import { parseArgs } from 'node:util';
import { runCampaign } from './campaign.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    seed: { type: 'string', default: '1' },
    backend: { type: 'string', default: 'fake' },
    rounds: { type: 'string', default: '100' },
    'max-kill-delay-ms': { type: 'string', default: '6000' },
    mutant: { type: 'string' },
  },
});
const mode = positionals[0];
if (mode !== 'crash' && mode !== 'faults') {
  console.error('usage: npm run campaign -- crash|faults [--backend fake|pageserver] [--seed N] [--rounds N] [--max-kill-delay-ms N] [--mutant NAME]');
  process.exit(2);
}
const backend = values.backend;
if (backend !== 'fake' && backend !== 'pageserver') {
  console.error('--backend is fake (the durable simulated cluster) or pageserver (the pageserver plugin on the pageserver simulators)');
  process.exit(2);
}
const seed = Number(values.seed);
const rounds = Number(values.rounds);
const maxKillDelayMs = Number(values['max-kill-delay-ms']);
if (![seed, rounds, maxKillDelayMs].every(Number.isInteger) || rounds < 1 || maxKillDelayMs < 0) {
  console.error('--seed, --rounds and --max-kill-delay-ms take whole numbers (rounds ≥ 1)');
  process.exit(2);
}
const started = Date.now();
const result = await runCampaign({
  mode,
  backend,
  seed,
  rounds,
  maxKillDelayMs,
  log: (line) => console.log(line),
  ...(values.mutant && { mutant: values.mutant }),
});
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
console.log(
  mode === 'crash'
    ? `crash campaign (${backend}) seed ${seed}: ${result.kills} kills, ${result.clean}/${rounds} rounds clean, ${result.operations} operations (${minutes} min)`
    : `fault campaign (${backend}) seed ${seed}: ${result.operationsNamed}/${result.operations} operations ended with every failure named, ${result.clean}/${rounds} rounds clean, ${result.stepsFailed} step(s) failed${result.faultsInjected ? `, ${result.faultsInjected.failures} transient failures and ${result.faultsInjected.spikes} latency spikes injected` : ''} (${minutes} min)`,
);
console.log(
  `replay: npm run campaign -- ${mode}${backend === 'pageserver' ? ' --backend pageserver' : ''} --seed ${seed} --rounds ${rounds}${mode === 'crash' ? ` --max-kill-delay-ms ${maxKillDelayMs}` : ''}`,
);
process.exit(result.violations.length ? 1 : 0);
