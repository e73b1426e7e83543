import fastJsonStringify from 'fast-json-stringify';
import type { FastifySchema, FastifySerializerCompiler } from 'fastify';

/**
 * Response serializers, compiled once per distinct schema: every route is served under up to three
 * version prefixes and shares its error schemas with every other route, so most schemas recur.
 * Compiling each occurrence anew cost start-up time and tens of megabytes of generated code. A
 * serializer is compiled when it first serializes: Fastify asks for every route's serializers
 * before it listens, which cost ~100 ms of CPU at start-up (docs/performance.md, "Start-up"), and
 * a process uses few of them.
 */
const cache = new Map<string, (data: unknown) => string>();
/** The same, by schema object: the versions of a route and the error answers of every route share theirs. */
const byObject = new WeakMap<object, (data: unknown) => string>();

export const serializerCompiler: FastifySerializerCompiler<FastifySchema> = ({ schema }) => {
  const known = byObject.get(schema);
  if (known) return known;
  const key = JSON.stringify(schema);
  let serialize = cache.get(key);
  if (!serialize) {
    let compiled: ((data: unknown) => string) | undefined;
    const compile = () =>
      fastJsonStringify(forSerialization(schema) as Parameters<typeof fastJsonStringify>[0]) as (data: unknown) => string;
    serialize = (data) => {
      compiled ??= compile();
      return compiled(data);
    };
    cache.set(key, serialize);
  }
  byObject.set(schema, serialize);
  return serialize;
};

type Schema = Record<string, unknown>;

/** Keywords that only describe: an option made of `type` and these is a plain type. */
const ANNOTATIONS = new Set(['type', 'description', 'title', 'examples', 'default', 'deprecated', 'readOnly', 'writeOnly']);
/** fast-json-stringify handles these before `nullable`: such a schema cannot simply be made nullable. */
const COMPOSITIONS = ['anyOf', 'oneOf', 'allOf', '$ref', 'if'];

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const isPlainType = (s: Schema, type?: string) =>
  typeof s.type === 'string' && (type === undefined || s.type === type) && Object.keys(s).every((k) => ANNOTATIONS.has(k));

/**
 * The schema as fast-json-stringify is given it. It serializes `anyOf` by running a JSON Schema
 * validator on the value for each option, at every value: each nullable field (TypeBox
 * `Union([T, Null()])`) cost Ajv calls per field and item, ~300 per history page and ~350 per
 * 50-lead list. Unions are rewritten into forms it serializes with type checks, which
 * produce the same JSON:
 * - `anyOf: [T, {type: 'null'}]` (either order) becomes T with `nullable: true`;
 * - `anyOf` of plain scalar types (`Union([Integer(), String()])`) becomes `type: [...]`.
 * Other unions stay. The route schemas themselves (validation, the OpenAPI document) are unchanged.
 */
export function forSerialization(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forSerialization);
  if (!isSchema(schema)) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) out[key] = forSerialization(value);
  const options = out.anyOf;
  if (!Array.isArray(options) || !options.every(isSchema)) return out;
  const { anyOf: _, ...siblings } = out;
  if (Object.keys(siblings).some((k) => !ANNOTATIONS.has(k) || k === 'type')) return out;

  const nulls = options.filter((o) => isPlainType(o, 'null'));
  const others = options.filter((o) => !isPlainType(o, 'null'));
  if (options.length === 2 && nulls.length === 1 && !COMPOSITIONS.some((k) => k in others[0])) {
    return { ...siblings, ...others[0], nullable: true };
  }
  const scalar = (o: Schema) => isPlainType(o) && o.type !== 'object' && o.type !== 'array';
  if (options.every(scalar)) {
    return { ...siblings, type: [...new Set(options.map((o) => o.type as string))] };
  }
  return out;
}
