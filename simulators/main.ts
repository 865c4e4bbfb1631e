/**
 * `lockkeeper simulator [--config-out FILE] [--nodes N] [--vms-per-node N] [--tenants N] [--shards-per-tenant N] [--location-config-ms N] [--hyperconverged]`
 * (ha:B1): runs the simulated cluster until SIGTERM / SIGINT and prints one JSON line when
 * it is ready, naming the API server and the config to start gateways with.
 */
import { parseArgs } from 'node:util';
import { startSimulator } from './simulator-process.ts';

export async function runSimulatorCommand(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'config-out': { type: 'string', default: 'simulator/lockkeeper.config.json' },
      nodes: { type: 'string' },
      'vms-per-node': { type: 'string' },
      'migrate-ms': { type: 'string' },
      tenants: { type: 'string' },
      'shards-per-tenant': { type: 'string' },
      'location-config-ms': { type: 'string' },
      hyperconverged: { type: 'boolean', default: false },
    },
  });
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
  const sim = await startSimulator({
    configOut: values['config-out'],
    nodes: count('nodes', values.nodes),
    vmsPerNode: count('vms-per-node', values['vms-per-node']),
    migrateMs: count('migrate-ms', values['migrate-ms']),
    tenants: count('tenants', values.tenants),
    shardsPerTenant: atLeastOne('shards-per-tenant', count('shards-per-tenant', values['shards-per-tenant'])),
    locationConfigMs: count('location-config-ms', values['location-config-ms']),
    hyperconverged: values.hyperconverged,
  });
  if (values.hyperconverged && !values.tenants) throw new Error('--hyperconverged puts a pageserver on each node: give --tenants N too');
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
