import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError, PreconditionFailedError, UnavailableError } from '../../../src/domain/errors.ts';
import { planMaintenance } from '../../../src/domain/vm/plan.ts';
import { precheckMaintenance, refusalError } from '../../../src/domain/vm/prechecks.ts';
import type { PrecheckRefusal } from '../../../src/domain/vm/types.ts';
import { node, vm } from './fixtures.ts';

const codes = (r: PrecheckRefusal[]) => r.map((x) => x.code);

describe('pre-checks vm:P1–P4', () => {
  it('accepts a ready worker node with another schedulable node', () => {
    expect(precheckMaintenance('1', [node('1'), node('2')])).toEqual([]);
  });

  it('vm:P1: unknown node → NOT_FOUND only', () => {
    expect(codes(precheckMaintenance('9', [node('1'), node('2')]))).toEqual(['NOT_FOUND']);
  });

  it('vm:P1: node not ready → UNAVAILABLE', () => {
    expect(codes(precheckMaintenance('1', [node('1', { ready: false }), node('2')]))).toEqual(['UNAVAILABLE']);
  });

  it.each(['VALIDATING', 'DRAINING', 'EVACUATING', 'COMPLETED', 'ERROR'] as const)('vm:P2: already in maintenance (%s) → ALREADY_IN_MAINTENANCE', (phase) => {
    const refusals = precheckMaintenance('1', [node('1', { maintenancePhase: phase }), node('2')]);
    expect(refusals).toEqual([expect.objectContaining({ code: 'ALREADY_IN_MAINTENANCE', phase })]);
  });

  it.each([
    ['only node', [node('1')]],
    ['others cordoned', [node('1'), node('2', { cordoned: true })]],
    ['others not ready', [node('1'), node('2', { ready: false })]],
    ['others in maintenance', [node('1'), node('2', { maintenancePhase: 'COMPLETED', cordoned: true }), node('3', { maintenancePhase: 'VALIDATING' })]],
  ])('vm:P3: last available node (%s) → LAST_AVAILABLE_NODE', (_, nodes) => {
    expect(codes(precheckMaintenance('1', nodes))).toEqual(['LAST_AVAILABLE_NODE']);
  });

  it.each(['control-plane', 'etcd', 'witness'])('vm:P4: the only control-plane node (role %s) is refused', (role) => {
    const refusals = precheckMaintenance('1', [node('1', { roles: [role] }), node('2')]);
    expect(codes(refusals)).toEqual(['CONTROL_PLANE_QUORUM']);
  });

  it('vm:P4: control-plane, etcd and witness roles count together', () => {
    expect(precheckMaintenance('1', [node('1', { roles: ['control-plane'] }), node('2', { roles: ['witness'] })])).toEqual([]);
    expect(precheckMaintenance('1', [node('1', { roles: ['etcd'] }), node('2', { roles: ['control-plane'] })])).toEqual([]);
  });

  it('vm:P4: with several control-plane nodes, refuse while another is in maintenance', () => {
    const nodes = [node('1', { roles: ['control-plane'] }), node('2', { roles: ['etcd'], maintenancePhase: 'DRAINING' }), node('3')];
    expect(codes(precheckMaintenance('1', nodes))).toEqual(['CONTROL_PLANE_QUORUM']);
    // A worker is not concerned.
    expect(precheckMaintenance('3', [...nodes, node('4')])).toEqual([]);
  });

  it('refusals come in order vm:P1, vm:P2, vm:P3, vm:P4', () => {
    const refusals = precheckMaintenance('1', [node('1', { ready: false, roles: ['control-plane'], maintenancePhase: 'ERROR' })]);
    expect(codes(refusals)).toEqual(['UNAVAILABLE', 'ALREADY_IN_MAINTENANCE', 'LAST_AVAILABLE_NODE', 'CONTROL_PLANE_QUORUM']);
  });

  it('vm:F3: force does not bypass the pre-checks', () => {
    const nodes = [node('1', { roles: ['control-plane'] })];
    const forced = planMaintenance({ nodeId: '1', force: true, nodes, vms: [vm('a', 'a', '1')] });
    expect(codes(forced.refusals)).toEqual(['LAST_AVAILABLE_NODE', 'CONTROL_PLANE_QUORUM']);
    expect(codes(planMaintenance({ nodeId: '9', force: true, nodes, vms: [] }).refusals)).toEqual(['NOT_FOUND']);
  });
});

describe('vm:P5: every refusal becomes a typed error with a human message', () => {
  const cases: [PrecheckRefusal, new (...args: never[]) => Error, string][] = [
    [{ code: 'NOT_FOUND', message: 'node 1 not found' }, NotFoundError, 'NOT_FOUND'],
    [{ code: 'UNAVAILABLE', message: 'node 1 is not ready' }, UnavailableError, 'UNAVAILABLE'],
    [{ code: 'ALREADY_IN_MAINTENANCE', message: 'already', phase: 'DRAINING' }, ConflictError, 'CONFLICT'],
    [{ code: 'LAST_AVAILABLE_NODE', message: 'last' }, PreconditionFailedError, 'PRECONDITION_FAILED'],
    [{ code: 'CONTROL_PLANE_QUORUM', message: 'quorum' }, PreconditionFailedError, 'PRECONDITION_FAILED'],
    [{ code: 'NON_MIGRATABLE_VMS', message: 'vms', byReason: {} }, PreconditionFailedError, 'PRECONDITION_FAILED'],
  ];
  it.each(cases)('%j', (refusal, type, code) => {
    const err = refusalError('1', refusal);
    expect(err).toBeInstanceOf(type);
    expect(err.code).toBe(code);
    expect(err.message.length).toBeGreaterThan(0);
    if (err instanceof PreconditionFailedError) expect(err.reason).toBe(refusal.code);
  });

  it('pre-check messages name the node', () => {
    const all = precheckMaintenance('7', [node('7', { ready: false, roles: ['etcd'], maintenancePhase: 'ERROR' })]);
    for (const r of all) expect(r.message).toContain('7');
  });
});
