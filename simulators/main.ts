/**
 * `lockkeeper simulator [options]` (`--help` lists them) (ha:B1): runs the simulated cluster until SIGTERM / SIGINT and prints one JSON line when
 * it is ready, naming the API server and the config to start gateways with.
 */
import { parseArgs } from 'node:util';
import { startSimulator } from './simulator-process.ts';

/** Every option with its value's name and meaning: parseArgs and `--help` read this one table. */
const OPTIONS = {
  'config-out': { value: 'FILE', help: 'where to write the gateway config (default simulator/lockkeeper.config.json)' },
  nodes: { value: 'N', help: 'worker nodes node-1 … node-N in two zones (default 4)' },
  'vms-per-node': { value: 'N', help: 'running VMs on each node (default 5)' },
  'migrate-ms': { value: 'N', help: 'how long a live migration takes, in milliseconds (default 200)' },
  tenants: { value: 'N', help: 'also serve one pageserver per node with N tenants, and the compute hook (default 0: none)' },
  'shards-per-tenant': { value: 'N', help: 'shards of each tenant, at least 1; 1 makes unsharded tenants (default 4)' },
  'location-config-ms': { value: 'N', help: "each pageserver's location_config latency, in milliseconds (default 0)" },
} as const;

const SIMULATOR_USAGE = `usage: lockkeeper simulator [options]

Runs the simulated cluster (Kubernetes + KubeVirt API, optionally pageservers and a compute hook)
until SIGTERM or SIGINT, and prints one JSON line when it is ready, naming the config to start
gateways with: LOCKKEEPER_CONFIG=<config> lockkeeper serve

options:
${Object.entries(OPTIONS)
  .map(([name, o]) => `  ${`--${name} ${o.value}`.padEnd(26)}${o.help}`)
  .join('\n')}
  ${'--separate-hosts'.padEnd(26)}with --tenants: each pageserver is a host of its own (default: pageserver N runs on node-N)
  ${'--hyperconverged'.padEnd(26)}with --tenants: pageserver N runs on Kubernetes node node-N (the default; kept for scripts)
  ${'-h, --help'.padEnd(26)}print this help and exit`;

export async function runSimulatorCommand(argv: string[]): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        ...(Object.fromEntries(Object.keys(OPTIONS).map((name) => [name, { type: 'string' }])) as Record<keyof typeof OPTIONS, { type: 'string' }>),
        hyperconverged: { type: 'boolean', default: false },
        'separate-hosts': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    throw new Error(`${e instanceof Error ? e.message : String(e)} (lockkeeper simulator --help lists the options)`);
  }
  if (values.help) {
    process.stdout.write(`${SIMULATOR_USAGE}\n`);
    return;
  }
  const count = (name: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, not ${JSON.stringify(value)}`);
    return n;
  };
  const atLeastOne = (name: string, n: number | undefined) => {
    if (n === 0) throw new Error(`--${name} must be at least 1`);
    return n;
  };
  // Checked before anything starts: a refused layout leaves no servers behind.
  if (values.hyperconverged && values['separate-hosts']) throw new Error('--hyperconverged and --separate-hosts exclude each other');
  for (const flag of ['hyperconverged', 'separate-hosts'] as const) {
    if (values[flag] && !values.tenants) throw new Error(`--${flag} says where the pageservers run: give --tenants N too`);
  }
  const sim = await startSimulator({
    configOut: values['config-out'] ?? 'simulator/lockkeeper.config.json',
    nodes: count('nodes', values.nodes),
    vmsPerNode: count('vms-per-node', values['vms-per-node']),
    migrateMs: count('migrate-ms', values['migrate-ms']),
    tenants: count('tenants', values.tenants),
    shardsPerTenant: atLeastOne('shards-per-tenant', count('shards-per-tenant', values['shards-per-tenant'])),
    locationConfigMs: count('location-config-ms', values['location-config-ms']),
    separateHosts: values['separate-hosts'],
  });
  process.stdout.write(
    `${JSON.stringify({
      msg: 'simulator ready: start gateways with LOCKKEEPER_CONFIG=<config>',
      kubernetes: sim.k8s.url,
      pageservers: sim.pageservers ? [...sim.pageservers.sims.values()].map((s) => s.url) : [],
      computeHook: sim.computeHook?.url ?? null,
      config: sim.configFile,
      kubeconfig: sim.kubeconfigFile,
    })}\n`,
  );
  const stop = () => void sim.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
