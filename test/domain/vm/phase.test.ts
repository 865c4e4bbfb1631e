import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConflictError } from '../../../src/domain/errors.ts';
import { canTransition, nextPhase, PHASE_EVENTS, PHASE_TRANSITIONS, PhaseTransitionError, type PhaseState } from '../../../src/domain/vm/phase.ts';
import { MAINTENANCE_PHASES } from '../../../src/domain/vm/types.ts';

const STATES: PhaseState[] = [null, ...MAINTENANCE_PHASES];

describe('maintenance phase machine (vm:M1–M6)', () => {
  it('walks the happy path VALIDATING → DRAINING → EVACUATING → COMPLETED', () => {
    let p: PhaseState = null;
    const seen: PhaseState[] = [];
    for (const e of ['enableRequested', 'validated', 'drained', 'evacuated'] as const) seen.push((p = nextPhase(p, e)));
    expect(seen).toEqual(['VALIDATING', 'DRAINING', 'EVACUATING', 'COMPLETED']);
  });

  it('any working phase can fail to ERROR; COMPLETED and ERROR cannot', () => {
    for (const p of ['VALIDATING', 'DRAINING', 'EVACUATING'] as const) expect(nextPhase(p, 'failed')).toBe('ERROR');
    expect(() => nextPhase('COMPLETED', 'failed')).toThrow(PhaseTransitionError);
    expect(() => nextPhase('ERROR', 'failed')).toThrow(PhaseTransitionError);
  });

  it('disable returns every phase to not-in-maintenance', () => {
    for (const p of MAINTENANCE_PHASES) expect(nextPhase(p, 'disabled')).toBeNull();
  });

  it('vm:D3: disable of a node not in maintenance is a typed Conflict', () => {
    expect(() => nextPhase(null, 'disabled')).toThrow(ConflictError);
    expect(() => nextPhase(null, 'disabled')).toThrow(/not in maintenance/);
  });

  it('vm:M5: clearing an error is allowed only from ERROR', () => {
    expect(nextPhase('ERROR', 'errorCleared')).toBeNull();
    for (const p of [null, 'VALIDATING', 'DRAINING', 'EVACUATING', 'COMPLETED'] as const) expect(canTransition(p, 'errorCleared')).toBe(false);
  });

  it('vm:P2: enable only from not-in-maintenance', () => {
    for (const p of MAINTENANCE_PHASES) expect(() => nextPhase(p, 'enableRequested')).toThrow(PhaseTransitionError);
  });

  it('vm:M1: a refused validation leaves no trace (VALIDATING → null), only from VALIDATING', () => {
    expect(nextPhase('VALIDATING', 'rejected')).toBeNull();
    expect(canTransition('DRAINING', 'rejected')).toBe(false);
  });

  it('phases cannot be skipped', () => {
    expect(() => nextPhase('VALIDATING', 'drained')).toThrow(PhaseTransitionError);
    expect(() => nextPhase('DRAINING', 'evacuated')).toThrow(PhaseTransitionError);
    expect(() => nextPhase(null, 'validated')).toThrow(PhaseTransitionError);
  });

  it('the table is deterministic: at most one target per (phase, event)', () => {
    const keys = PHASE_TRANSITIONS.map((t) => `${t.from}:${t.event}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('property: random event sequences stay in the table', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PHASE_EVENTS), { maxLength: 40 }), (events) => {
        let p: PhaseState = null;
        for (const e of events) {
          const allowed = PHASE_TRANSITIONS.find((t) => t.from === p && t.event === e);
          if (allowed) {
            p = nextPhase(p, e);
            expect(p).toBe(allowed.to);
          } else {
            expect(() => nextPhase(p, e)).toThrow(PhaseTransitionError);
          }
          expect(STATES).toContain(p);
        }
      }),
      { seed: 42, numRuns: 500 },
    );
  });
});
