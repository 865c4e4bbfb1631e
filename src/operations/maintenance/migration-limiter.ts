/**
 * Bounds live migrations like KubeVirt does: at most `cluster` in flight in the whole
 * cluster and `perNode` leaving any one node. Waiters are served in arrival order.
 */
export class MigrationLimiter {
  private total = 0;
  private readonly outbound = new Map<string, number>();
  private readonly waiting: { node: string; grant: (release: () => void) => void }[] = [];

  constructor(private readonly limits: () => { cluster: number; perNode: number }) {}

  /** Resolves with the release function once a slot leaving `sourceNodeId` is free. */
  acquire(sourceNodeId: string): Promise<() => void> {
    return new Promise((grant) => {
      this.waiting.push({ node: sourceNodeId, grant });
      this.pump();
    });
  }

  inFlight(sourceNodeId?: string): number {
    return sourceNodeId === undefined ? this.total : (this.outbound.get(sourceNodeId) ?? 0);
  }

  private pump(): void {
    const { cluster, perNode } = this.limits();
    for (let i = 0; i < this.waiting.length && this.total < cluster;) {
      const w = this.waiting[i]!;
      if ((this.outbound.get(w.node) ?? 0) >= perNode) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.total++;
      this.outbound.set(w.node, (this.outbound.get(w.node) ?? 0) + 1);
      let released = false;
      w.grant(() => {
        if (released) return;
        released = true;
        this.total--;
        this.outbound.set(w.node, (this.outbound.get(w.node) ?? 1) - 1);
        this.pump();
      });
    }
  }
}
