import { GraphQLError, type ValidationContext } from 'graphql';

/**
 * graphql-armor's rejection options: a validation error with a stable `extensions.code`,
 * without the misleading "Syntax Error:" prefix graphql-armor gives its message.
 */
export function rejectAsValidationError(code: string) {
  return {
    propagateOnRejection: false,
    onReject: [
      (ctx: ValidationContext | null, error: GraphQLError) =>
        ctx?.reportError(new GraphQLError(error.message.replace(/^Syntax Error: /, ''), { extensions: { code } })),
    ],
  };
}
