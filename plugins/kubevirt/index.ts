import { systemClock, type Clock } from '../../src/cluster/clock.ts';
import { definePlugin, type PluginContext } from '../../src/cluster/plugin.ts';
import { KubevirtBackend } from './backend.ts';
import { loadKubeConfig, makeClients } from './kube.ts';
import { kubevirtOptionsSchema, type KubevirtOptions, type KubevirtOptionsInput } from './options.ts';

export interface CreateKubevirtBackendOptions extends KubevirtOptionsInput {
  clock?: Clock;
  /** Directory a relative `kubeconfigPath` is resolved against (default: the working directory). */
  configDir?: string;
  log?: PluginContext['log'];
  mayAct?: PluginContext['mayAct'];
  authority?: PluginContext['authority'];
  onLeaderChange?: PluginContext['onLeaderChange'];
}

const silent: PluginContext['log'] = { info() {}, warn() {} };

/** Connects to the cluster, lists and starts watching; rejects (typed) when the API server cannot be used. */
export async function createKubevirtBackend(input: CreateKubevirtBackendOptions = {}): Promise<KubevirtBackend> {
  const { clock = systemClock, configDir = process.cwd(), log = silent, mayAct, authority, onLeaderChange, ...rest } = input;
  const options: KubevirtOptions = kubevirtOptionsSchema.parse(rest);
  const backend = new KubevirtBackend(makeClients(loadKubeConfig(options, configDir), { mayAct, authority }), options, clock, log, { mayAct, onLeaderChange });
  await backend.start();
  return backend;
}

/** Kubernetes + KubeVirt (docs/architecture.md §1): VMs only; shards are another plugin's. */
const kubevirtPlugin = definePlugin<KubevirtOptions>({
  name: 'kubevirt',
  optionsSchema: kubevirtOptionsSchema,
  async create(options, context) {
    const backend = new KubevirtBackend(makeClients(loadKubeConfig(options, context.configDir), context), options, context.clock, context.log, context);
    await backend.start();
    return backend;
  },
});

export default kubevirtPlugin;
export { KubevirtBackend } from './backend.ts';
export { kubevirtOptionsSchema, type KubevirtOptions, type KubevirtOptionsInput } from './options.ts';
export * from './mapping.ts';
