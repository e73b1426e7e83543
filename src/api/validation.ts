import { Ajv, type ValidateFunction } from 'ajv';
import formatsPlugin from 'ajv-formats';
import type { FastifySchema, FastifySchemaCompiler } from 'fastify';
import { VERSION_TRAITS, versionOfUrl } from './versions.js';

/**
 * Two validators: query strings, paths and headers are text and need coercion ("5" -> 5); JSON
 * bodies are validated strictly, so a known field of the wrong type is a 400 (decisions.md §3).
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
  return ajv;
}

const coercing = makeAjv(true);
const strict = makeAjv(false);
// The same schema serves three version prefixes: compile it once.
const cache = new Map<string, ValidateFunction>();

export const validatorCompiler: FastifySchemaCompiler<FastifySchema> = ({ schema, httpPart, url }) => {
  const version = versionOfUrl(url);
  const coerce = httpPart !== 'body' || (version !== undefined && VERSION_TRAITS[version].formBodies);
  const key = `${coerce ? 'c' : 's'}:${JSON.stringify(schema)}`;
  let validate = cache.get(key);
  if (!validate) {
    validate = compiledOnFirstUse(() => (coerce ? coercing : strict).compile(schema as object));
    cache.set(key, validate);
  }
  return validate;
};

/**
 * A validator compiled when it first validates: compiling every route's schemas for three versions
 * at start-up cost ~150 ms of the first second (issue 9), and most of them a process never uses.
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
