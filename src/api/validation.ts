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
    validate = (coerce ? coercing : strict).compile(schema as object);
    cache.set(key, validate);
  }
  return validate;
};
