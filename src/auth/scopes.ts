/**
 * Scopes and where each root field's scope comes from (issue 7).
 *
 * viewer ⊂ operator ⊂ admin. The scope of every Query, Mutation and Subscription field is
 * decided here or on the field itself (`authScopes`), and enforced by Pothos scope-auth:
 *
 * 1. `authScopes` written on the field (e.g. the token and audit fields), else
 * 2. {@link FIELD_SCOPES}, keyed `Type.field` (fields defined in modules owned elsewhere), else
 * 3. {@link ROOT_DEFAULT_SCOPE} of the root type: queries and subscriptions need viewer,
 *    mutations operator.
 *
 * `test/auth/scopes.test.ts` lists the scope it expects for every mutation and subscription
 * (and every query needing more than viewer) and fails when the schema has a field it does
 * not list, so a new mutation cannot ship without somebody deciding its scope.
 */
export const SCOPES = ['viewer', 'operator', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

const RANK: Record<Scope, number> = { viewer: 1, operator: 2, admin: 3 };

export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (SCOPES as readonly string[]).includes(value);
}

/** Whether a caller holding `held` may use something that needs `needed`. */
export function scopeAllows(held: Scope | null, needed: Scope): boolean {
  return held !== null && RANK[held] >= RANK[needed];
}

const ROOT_DEFAULT_SCOPE: Record<'Query' | 'Mutation' | 'Subscription', Scope> = {
  Query: 'viewer',
  Subscription: 'viewer',
  Mutation: 'operator',
};

/** Root fields whose scope differs from their root type's default. */
const FIELD_SCOPES: Readonly<Record<string, Scope>> = {
  // Sets a node's policy by hand, bypassing drain/fill: admin, like Neon's node configure.
  'Mutation.configureNode': 'admin',
  // Restarts, outages, faults of the simulated cluster.
  'Mutation.simulation': 'admin',
  // Neon parity: Neon's controller needs its admin scope for node availability, deletes and per-shard controls.
  'Mutation.setNodeAvailability': 'admin',
  'Mutation.startNodeDelete': 'admin',
  'Mutation.cancelNodeDelete': 'admin',
  'Mutation.migrateShard': 'admin',
  'Mutation.migrateShardSecondary': 'admin',
  'Mutation.cancelShardReconcile': 'admin',
  'Mutation.setShardPolicy': 'admin',
  'Mutation.setPreferredZone': 'admin',
  // neon:W10: Neon's tenant config routes need its admin scope, reads included.
  'Mutation.setTenantConfig': 'admin',
  'Query.tenantConfig': 'admin',
};

/** The scope a root field needs when it states none itself. */
export function defaultScopeOf(typeName: string, fieldName: string): Scope | undefined {
  const listed = FIELD_SCOPES[`${typeName}.${fieldName}`];
  if (listed) return listed;
  return (ROOT_DEFAULT_SCOPE as Record<string, Scope | undefined>)[typeName];
}
