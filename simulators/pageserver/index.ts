export {
  PageserverSim,
  MODES,
  LOCATION_CONFIG_HOLD_PATH,
  type Mode,
  type Chaos,
  type Fault,
  type FaultKind,
  type SeedLocation,
  type PageserverSimOptions,
  type PageserverMetadata,
} from './simulator.ts';
export { WalStreams, DEFAULT_TIMELINE_ID, formatLsn, parseLsn } from './wal.ts';
export { SafetyChecker, type LocationView } from './safety.ts';
export { formatShardId, parseShardId } from './shard-id.ts';
export { startPageserverFleet, roundRobinShards, shardIdOf, tenantIdOf, type PageserverFleet, type SimClusterSpec, type SimShardSpec } from './fleet.ts';
export { LocationConfigMeter } from './meter.ts';
