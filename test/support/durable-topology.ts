/** A VM on node 1 of a durable simulated cluster's topology, with a maintenance strategy label (null: none). */
export const vmOn1 = (name: string, label: string | null, extra: object = {}) => ({
  namespace: 'default',
  name,
  nodeId: '1',
  maintenanceStrategyLabel: label,
  ...extra,
});
