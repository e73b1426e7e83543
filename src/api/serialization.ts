import fastJsonStringify from 'fast-json-stringify';
import type { FastifySchema, FastifySerializerCompiler } from 'fastify';

/**
 * Response serializers, compiled once per distinct schema: every route is served under up to three
 * version prefixes and shares its error schemas with every other route, so most schemas recur.
 * Compiling each occurrence anew cost start-up time and tens of megabytes of generated code.
 */
const cache = new Map<string, (data: unknown) => string>();

export const serializerCompiler: FastifySerializerCompiler<FastifySchema> = ({ schema }) => {
  const key = JSON.stringify(schema);
  let serialize = cache.get(key);
  if (!serialize) {
    serialize = fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0]) as (data: unknown) => string;
    cache.set(key, serialize);
  }
  return serialize;
};
