import { Type } from 'typebox';

/** A positive integer id in a path. v1.3 answers 400 when it is not one; v1.1/v1.2 answer 404. */
export const Id = Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 });
export const IdParams = Type.Object({ id: Id });

export const Empty = Type.Object({}, { description: 'Empty object' });

export const TokenObject = Type.Object(
  { token: Type.String({ description: 'JSON Web Token' }), exp: Type.Integer({ description: 'Expiry, Unix seconds' }) },
  { title: 'Token', description: 'Token object' },
);
