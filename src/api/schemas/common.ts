import { Type } from 'typebox';
import { MAX_VALUES } from '../../domain/leads/lead-filters.js';

/** A positive integer id in a path. v1.3 answers 400 when it is not one; v1.1/v1.2 answer 404. */
export const Id = Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 });
export const IdParams = Type.Object({ id: Id });

export const Empty = Type.Object({}, { description: 'Empty object' });

export const TokenObject = Type.Object(
  { token: Type.String({ description: 'JSON Web Token' }), exp: Type.Integer({ description: 'Expiry, Unix seconds' }) },
  { title: 'Token', description: 'Token object' },
);

/**
 * The query of a bulk read by id (`GET /v1.3/customers?id=1&id=2`), read with `requiredIds`: its
 * one parameter, and the sentence that says what it takes, for the route's description.
 */
export function idsQuery(param: string, description: string) {
  return {
    rule:
      `\`${param}\` is required: without it, with more than ${MAX_VALUES} values or with a value that is not an integer, 400. ` +
      `Repeat the parameter, separate values with commas, or write \`${param}[]=1&${param}[]=2\`.`,
    querystring: Type.Object({
      [param]: Type.Optional(Type.Array(Type.String({ maxLength: 4000 }), { maxItems: MAX_VALUES, description })),
    }),
  };
}
