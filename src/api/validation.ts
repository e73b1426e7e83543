import { Ajv, type ValidateFunction } from 'ajv';
import formatsPlugin from 'ajv-formats';
import type { FastifySchema, FastifySchemaCompiler } from 'fastify';
import { VERSION_TRAITS, versionOfUrl } from './versions.js';

/**
 * Two validators: query strings, paths and headers are text and need coercion ("5" -> 5); JSON
 * bodies are validated strictly, so a known field of the wrong type is a 400 (docs/api/errors.md).
 * v1.1 accepts form bodies, whose values are text too, so its bodies coerce.
 */
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: true,
    allErrors: true,
    strict: false,
  });
  const addFormats = (formatsPlugin as unknown as { default?: typeof formatsPlugin }).default ?? formatsPlugin;
  (addFormats as unknown as (ajv: Ajv) => void)(ajv);
  ajv.addKeyword({
    keyword: NO_NUL,
    type: 'string',
    schemaType: 'boolean',
    error: { message: 'must not contain NUL characters' },
    validate: (on: boolean, data: string) => !on || !data.includes('\0'),
  });
  return ajv;
}

const NO_NUL = 'x-parley-no-nul';

/**
 * What every route accepts whatever its schema says, added to a copy of the schema used only for
 * validation (the OpenAPI document keeps the route's own): strings without NUL characters (no
 * database text holds one; PostgreSQL refuses them) and integers that are exact in JavaScript, so
 * well inside PostgreSQL's bigint (`1e308` is an integer to JSON Schema). Both are a 400 with the
 * field's path rather than a failure deep in a query.
 */
export function hardenSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(hardenSchema);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    // `enum`, `const`, `default` and `examples` hold values, not schemas.
    out[key] = key === 'enum' || key === 'const' || key === 'default' || key === 'examples' ? value : hardenSchema(value);
  }
  const types = ([] as unknown[]).concat(out.type ?? []);
  if (types.includes('string')) out[NO_NUL] = true;
  if (types.includes('integer')) {
    if (out.maximum === undefined && out.exclusiveMaximum === undefined) out.maximum = Number.MAX_SAFE_INTEGER;
    if (out.minimum === undefined && out.exclusiveMinimum === undefined) out.minimum = Number.MIN_SAFE_INTEGER;
  }
  return out;
}

const coercing = makeAjv(true);
const strict = makeAjv(false);
// The same schema serves three version prefixes: compile it once. Found by the schema object first
// (the versions of a route share it), by its JSON text otherwise: writing the text of every route's
// schemas was a share of the start-up (docs/performance.md, "Start-up").
const cache = new Map<string, ValidateFunction>();
const byObject = { c: new WeakMap<object, ValidateFunction>(), s: new WeakMap<object, ValidateFunction>() };

export const validatorCompiler: FastifySchemaCompiler<FastifySchema> = ({ schema, httpPart, url }) => {
  const version = versionOfUrl(url);
  const coerce = httpPart !== 'body' || (version !== undefined && VERSION_TRAITS[version].formBodies);
  const seen = byObject[coerce ? 'c' : 's'];
  let validate = seen.get(schema);
  if (validate) return validate;
  const key = `${coerce ? 'c' : 's'}:${JSON.stringify(schema)}`;
  validate = cache.get(key);
  if (!validate) {
    validate = compiledOnFirstUse(() => (coerce ? coercing : strict).compile(hardenSchema(schema) as object));
    cache.set(key, validate);
  }
  seen.set(schema, validate);
  return validate;
};

/**
 * A validator compiled when it first validates: compiling every route's schemas for three versions
 * at start-up cost ~150 ms of the first second, and most of them a process never uses.
 * It behaves as the Ajv function: Fastify reads `schemaEnv` (then passes the parent data, so root
 * values can be coerced) and, after a failed call, `errors`.
 */
function compiledOnFirstUse(compile: () => ValidateFunction): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const get = () => (compiled ??= compile());
  const validate = ((data: unknown, dataCxt?: unknown) => {
    const fn = get() as (data: unknown, dataCxt?: unknown) => boolean;
    const ok = fn(data, dataCxt);
    validate.errors = get().errors;
    return ok;
  }) as ValidateFunction;
  validate.errors = null;
  Object.defineProperty(validate, 'schemaEnv', { get: () => get().schemaEnv });
  return validate;
}
