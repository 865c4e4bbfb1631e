/**
 * Safety across all simulated pageservers of a test. Every simulator reports each change of
 * a location here; a violation is recorded (and the test fails in afterEach via
 * `assertSafe`):
 * - a pageserver told to hold a shard `AttachedSingle` while another one holds it
 *   `AttachedSingle` too — unless that other one is stale (an older generation) and could
 *   not be told anything (it was not answering: a lost node whose shards failed over,
 *   neon:H5, keeps its stale attachment until it is reachable again, and generations make
 *   that harmless);
 * - a pageserver told to hold an attached location (AttachedSingle / AttachedMulti) with
 *   a generation lower than one already issued for that shard. AttachedStale is excluded:
 *   Neon's live migration sets the origin AttachedStale precisely because a newer
 *   generation is about to be issued;
 * - a shard that had an attached location (any Attached* mode) left with none.
 */
export interface LocationView {
  mode: string;
  generation: number | null;
}

export class SafetyChecker {
  readonly violations: string[] = [];
  private readonly locations = new Map<string, Map<string, LocationView>>();
  private readonly issued = new Map<string, number>();
  private readonly unreachable = new Set<string>();
  private readonly everAttached = new Set<string>();

  /** A generation a pageserver was told to attach with (it is issued from then on). */
  issue(shardId: string, generation: number): void {
    if (generation > (this.issued.get(shardId) ?? 0)) this.issued.set(shardId, generation);
  }

  highestIssued(shardId: string): number {
    return this.issued.get(shardId) ?? 0;
  }

  /**
   * Whether the pageserver answers (a simulator that stops answering or restarts is not
   * reachable meanwhile). A test also says so for a node the controller was told is
   * offline while it still answers (neon:H8): it keeps its stale attachments until the
   * controller reaches it again, as after a partition.
   */
  setReachable(nodeId: string, reachable: boolean): void {
    if (reachable) this.unreachable.delete(nodeId);
    else this.unreachable.add(nodeId);
  }

  /** A location changed (null = gone); checks the change against the shard's other locations. */
  record(nodeId: string, shardId: string, view: LocationView | null): void {
    const byNode = this.locations.get(shardId) ?? new Map<string, LocationView>();
    this.locations.set(shardId, byNode);
    if (view) byNode.set(nodeId, { ...view });
    else byNode.delete(nodeId);
    const attachedAnywhere = [...byNode.values()].some((v) => v.mode.startsWith('Attached'));
    if (attachedAnywhere) this.everAttached.add(shardId);
    else if (this.everAttached.has(shardId))
      this.violations.push(`shard ${shardId}: no attached location left (${JSON.stringify(Object.fromEntries(byNode))})`);
    if (!view) return;
    const issued = this.highestIssued(shardId);
    if ((view.mode === 'AttachedSingle' || view.mode === 'AttachedMulti') && (view.generation ?? 0) < issued) {
      this.violations.push(`shard ${shardId}: node ${nodeId} is ${view.mode} with generation ${view.generation} but ${issued} was issued`);
    }
    if (view.mode !== 'AttachedSingle') return;
    for (const [other, v] of byNode) {
      if (other === nodeId || v.mode !== 'AttachedSingle') continue;
      const staleAndUnreachable = (v.generation ?? 0) < (view.generation ?? 0) && this.unreachable.has(other);
      if (!staleAndUnreachable) this.violations.push(`shard ${shardId}: AttachedSingle on nodes ${[other, nodeId].sort().join(' and ')} at once`);
    }
  }

  assertSafe(): void {
    if (this.violations.length) throw new Error(`pageserver safety violated:\n${this.violations.join('\n')}`);
  }
}
