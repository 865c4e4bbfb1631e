import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../src/domain/errors.ts';
import { effectiveStrategy, isEmptySelector, matchesSelector, parseStrategyInput } from '../../../src/domain/vm/strategy.ts';

describe('vm:V1: setting a strategy', () => {
  it.each(['Migrate', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable', 'Shutdown'] as const)('accepts %s', (value) => {
    expect(parseStrategyInput(value)).toBe(value);
  });

  it('null removes the label (= Migrate)', () => {
    expect(parseStrategyInput(null)).toBeNull();
    expect(effectiveStrategy(null).strategy).toBe('Migrate');
  });

  it.each(['migrate', 'shutdown', 'Migrate ', '', 'Reboot'])('refuses %j with a typed error naming field and value', (value) => {
    let caught: unknown;
    try {
      parseStrategyInput(value);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(InvalidInputError);
    const err = caught as InvalidInputError;
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.field).toBe('strategy');
    expect(err.value).toBe(value);
    expect(err.message).toBe(`invalid maintenance mode strategy: ${value}`);
  });
});

describe('vm:V2: an invalid label already on a VM', () => {
  it('means Migrate, flagged invalid, still counted as labelled', () => {
    expect(effectiveStrategy('migrate')).toEqual({ strategy: 'Migrate', labelValid: false, labelled: true });
  });
});

describe('vm:V3: bulk-labelling selector', () => {
  const a = { namespace: 'prod', labels: { app: 'db', tier: 'back' } };
  const b = { namespace: 'dev', labels: { app: 'db' } };
  const c = { namespace: 'prod', labels: { app: 'web' } };

  it('namespace only', () => {
    expect([a, b, c].filter((v) => matchesSelector(v, { namespace: 'prod' }))).toEqual([a, c]);
  });

  it('labels only: every pair must match', () => {
    expect([a, b, c].filter((v) => matchesSelector(v, { labels: { app: 'db' } }))).toEqual([a, b]);
    expect([a, b, c].filter((v) => matchesSelector(v, { labels: { app: 'db', tier: 'back' } }))).toEqual([a]);
  });

  it('namespace and labels together', () => {
    expect([a, b, c].filter((v) => matchesSelector(v, { namespace: 'dev', labels: { app: 'db' } }))).toEqual([b]);
  });

  it('does not match inherited properties', () => {
    expect(matchesSelector({ namespace: 'x', labels: {} }, { labels: { toString: 'x' } })).toBe(false);
  });

  it('an empty selector matches everything and says so', () => {
    expect([a, b, c].every((v) => matchesSelector(v, {}))).toBe(true);
    expect(isEmptySelector({})).toBe(true);
    expect(isEmptySelector({ labels: {} })).toBe(true);
    expect(isEmptySelector({ namespace: 'prod' })).toBe(false);
  });
});
