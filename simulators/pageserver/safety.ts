/**
 * Safety across all simulated pageservers of a test (issue 6, point 5). Every simulator
 * reports each change of a location here; a violation is recorded (and the test fails in
 * afterEach via `assertSafe`):
 * - two locations of a shard in AttachedSingle at the same instant;
 * - an attached location (AttachedSingle / AttachedMulti) with a generation lower than one
 *   already issued for that shard. AttachedStale is excluded: Neon's live migration sets
 *   the origin AttachedStale precisely because a newer generation is about to be issued;
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

  /** A generation a pageserver was told to attach with (it is issued from then on). */
  issue(shardId: string, generation: number): void {
    if (generation > (this.issued.get(shardId) ?? 0)) this.issued.set(shardId, generation);
  }

  highestIssued(shardId: string): number {
    return this.issued.get(shardId) ?? 0;
  }

  /** A location changed (null = gone); checks the whole shard at this instant. */
  record(nodeId: string, shardId: string, view: LocationView | null): void {
    const byNode = this.locations.get(shardId) ?? new Map<string, LocationView>();
    this.locations.set(shardId, byNode);
    if (view) byNode.set(nodeId, { ...view });
    else byNode.delete(nodeId);
    this.check(shardId);
  }

  private readonly everAttached = new Set<string>();

  private check(shardId: string): void {
    const byNode = this.locations.get(shardId)!;
    const attachedAnywhere = [...byNode.values()].some((v) => v.mode.startsWith('Attached'));
    if (attachedAnywhere) this.everAttached.add(shardId);
    else if (this.everAttached.has(shardId))
      this.violations.push(`shard ${shardId}: no attached location left (${JSON.stringify(Object.fromEntries(byNode))})`);
    const single = [...byNode].filter(([, v]) => v.mode === 'AttachedSingle').map(([n]) => n);
    if (single.length > 1) this.violations.push(`shard ${shardId}: AttachedSingle on nodes ${single.join(' and ')} at once`);
    const issued = this.highestIssued(shardId);
    for (const [node, v] of byNode) {
      if ((v.mode === 'AttachedSingle' || v.mode === 'AttachedMulti') && (v.generation ?? 0) < issued) {
        this.violations.push(`shard ${shardId}: node ${node} is ${v.mode} with generation ${v.generation} but ${issued} was issued`);
      }
    }
  }

  assertSafe(): void {
    if (this.violations.length) throw new Error(`pageserver safety violated:\n${this.violations.join('\n')}`);
  }
}
