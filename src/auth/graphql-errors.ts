import { GraphQLError, type GraphQLResolveInfo } from 'graphql';
import type { ForbiddenResult } from '@pothos/plugin-scope-auth';
import { AuthScopeFailureType, type AuthFailure } from '@pothos/plugin-scope-auth';
import type { AuthRefusal, Identity } from './service.ts';

function neededScopes(failure: AuthFailure): string[] {
  if (failure.kind === AuthScopeFailureType.AuthScope) return [failure.scope];
  if (failure.kind === AuthScopeFailureType.AnyAuthScopes || failure.kind === AuthScopeFailureType.AllAuthScopes) return failure.failures.flatMap(neededScopes);
  return [];
}

/**
 * The GraphQL error for a field the caller may not use: UNAUTHENTICATED (HTTP 401) without
 * a token, FORBIDDEN (HTTP 403) with a token whose scope is too weak.
 */
export function unauthorizedError(identity: Identity, info: GraphQLResolveInfo, result: ForbiddenResult): GraphQLError {
  const field = `${info.parentType.name}.${info.fieldName}`;
  const needed = neededScopes(result.failure);
  const scope = needed.length ? needed.join(' or ') : 'a stronger scope';
  if (identity.scope === null) {
    return new GraphQLError(`authentication required: ${field} needs a token with the ${scope} scope (Authorization: Bearer <token>)`, {
      extensions: { code: 'UNAUTHENTICATED', requiredScope: needed[0] ?? null, http: { status: 401 } },
    });
  }
  return new GraphQLError(`forbidden: ${field} needs the ${scope} scope; token "${identity.name}" has ${identity.scope}`, {
    extensions: { code: 'FORBIDDEN', requiredScope: needed[0] ?? null, http: { status: 403 } },
  });
}

/** A request refused at the door (bad, revoked or expired token). */
export function refusalError(refusal: AuthRefusal): GraphQLError {
  return new GraphQLError(refusal.message, {
    extensions: {
      code: refusal.code,
      http: { status: refusal.status, ...(refusal.status === 401 && { headers: { 'www-authenticate': 'Bearer realm="lockkeeper"' } }) },
    },
  });
}
