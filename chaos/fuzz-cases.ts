/**
 * Bad input derived from an operation's OpenAPI schema: wrong types, extreme numbers, NUL and
 * invalid UTF-8, deep nesting, oversized strings, wrong content types. Each case is one request.
 */

export interface OpenApiOperation {
  method: string;
  /** The OpenAPI path, `{param}` placeholders included. */
  path: string;
  pathParams: string[];
  queryParams: Array<{ name: string; schema: JsonSchema }>;
  /** The JSON body schema, when the operation takes one. */
  body?: JsonSchema;
  /** The operation takes multipart/form-data. */
  multipart: boolean;
}

export type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  minimum?: number;
  maxLength?: number;
  format?: string;
};

export interface FuzzCase {
  label: string;
  /** Path parameter values (already URL-encoded), query string (without `?`), body. */
  path: Record<string, string>;
  query: string;
  contentType?: string;
  payload?: string | Buffer;
}

const NESTED = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

/** Values of the wrong kind or at the edges, in JSON text, for any field. */
const FIELD_VALUES: Array<[string, string]> = [
  ['null', 'null'],
  ['true', 'true'],
  ['string', '"x"'],
  ['number-string', '"12"'],
  ['object', '{"a":1}'],
  ['array', '[1,"a",null]'],
  ['1e308', '1e308'],
  ['-1e308', '-1e308'],
  ['2^63', '9223372036854775808'],
  ['-2^63-1', '-9223372036854775809'],
  ['2^53+1', '9007199254740993'],
  ['fraction', '1.5'],
  ['negative', '-1'],
  ['zero', '0'],
  ['-0', '-0'],
  ['tiny', '1e-308'],
  ['nul', '"a\\u0000b"'],
  ['nul-only', '"\\u0000"'],
  ['lone-surrogate', '"\\ud800x"'],
  ['control', '"\\u0001\\u001f\\u007f"'],
  ['oversized', JSON.stringify('x'.repeat(200_000))],
  ['nested-60', NESTED(60)],
  ['nested-200', NESTED(200)],
  ['email-ish', '"a@b"'],
  ['url-ish', '"http://[2002:7f00:1::]/"'],
];

/** Path segments that are no valid id. */
const PATH_VALUES: Array<[string, string]> = [
  ['zero', '0'],
  ['negative', '-1'],
  ['1e308', '1e308'],
  ['2^64', '18446744073709551616'],
  ['word', 'abc'],
  ['nul', '%00'],
  ['bad-utf8', '%E0%A4%A'],
  ['invalid-utf8', '%FF%FE'],
  ['long', 'x'.repeat(3000)],
  ['fraction', '1.5'],
];

/** Query values (URL-encoded) that are wrong or extreme. */
const QUERY_VALUES: Array<[string, string]> = [
  ['1e308', '1e308'],
  ['-1', '-1'],
  ['word', 'abc'],
  ['nul', '%00'],
  ['invalid-utf8', '%FF%FE'],
  ['long', 'y'.repeat(5000)],
  ['2^64', '18446744073709551616'],
  ['empty', ''],
  ['array', '[1]'],
];

/** Bodies that are broken whatever the schema. */
const WHOLE_BODIES: Array<[string, string, string | Buffer]> = [
  ['invalid-utf8', 'application/json', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d])],
  ['nested-10000', 'application/json', NESTED(10_000)],
  ['nested-objects', 'application/json', `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`],
  ['truncated', 'application/json', '{"a": [1, 2'],
  ['not-json', 'application/json', 'hello'],
  ['json-array', 'application/json', '[]'],
  ['json-scalar', 'application/json', '12'],
  ['text', 'text/plain', 'hello'],
  ['xml', 'application/xml', '<a>1</a>'],
  ['form', 'application/x-www-form-urlencoded', 'a=1&b[c]=2&d=%00&e=%FF'],
  ['multipart-garbage', 'multipart/form-data; boundary=zz', '--zz\r\nContent-Disposition: form-data; name="a"\r\n\r\n\u0000\r\n--zz'],
  ['multipart-no-boundary', 'multipart/form-data', 'garbage'],
  ['utf16-json', 'application/json; charset=utf-16', Buffer.from('{"a":1}', 'utf16le')],
  ['content-type-junk', 'application/json; charset=\u0000', '{}'],
];

/** A plausible value for a schema, so one bad field at a time reaches the deeper checks. */
export function sample(schema: JsonSchema | undefined, depth = 0): unknown {
  if (!schema || depth > 4) return null;
  const branch = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (branch) return sample(branch, depth + 1);
  if (schema.enum?.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'string':
      return schema.format === 'email' ? 'fuzz@example.com' : schema.format === 'uri' ? 'https://example.com/' : 'fuzz';
    case 'integer':
    case 'number':
      return Math.max(1, schema.minimum ?? 1);
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) out[name] = sample(schema.properties?.[name], depth + 1);
      return out;
    }
    default:
      return null;
  }
}

/** Every case of one operation; `validId` fills path parameters that are not under test. */
export function casesFor(op: OpenApiOperation, validId: string): FuzzCase[] {
  // A DELETE with a valid id would succeed and remove what later cases need: only bad ids there.
  const destructive = op.method === 'DELETE';
  const basePath = Object.fromEntries(op.pathParams.map((p) => [p, validId]));
  const cases: FuzzCase[] = [];
  for (const param of op.pathParams) {
    for (const [label, value] of PATH_VALUES) {
      cases.push({ label: `path ${param}=${label}`, path: { ...basePath, [param]: value }, query: '' });
    }
  }
  if (destructive && op.pathParams.length) return cases;
  for (const { name } of op.queryParams) {
    for (const [label, value] of QUERY_VALUES)
      cases.push({ label: `query ${name}=${label}`, path: basePath, query: `${encodeURIComponent(name)}=${value}` });
    cases.push({ label: `query ${name} repeated`, path: basePath, query: `${name}=1&${name}=2` });
  }
  if (op.body) {
    const base = (sample(op.body) ?? {}) as Record<string, unknown>;
    for (const name of Object.keys(op.body.properties ?? {})) {
      for (const [label, value] of FIELD_VALUES) {
        const text = JSON.stringify({ ...base, [name]: '__FUZZ__' }).replace('"__FUZZ__"', value);
        cases.push({ label: `body ${name}=${label}`, path: basePath, query: '', contentType: 'application/json', payload: text });
      }
    }
    for (const [label, contentType, payload] of WHOLE_BODIES) {
      cases.push({ label: `body ${label}`, path: basePath, query: '', contentType, payload });
    }
  } else if (op.method !== 'GET' && op.method !== 'HEAD') {
    for (const [label, contentType, payload] of WHOLE_BODIES.slice(0, 4)) {
      cases.push({ label: `unexpected body ${label}`, path: basePath, query: '', contentType, payload });
    }
  }
  if (op.multipart) {
    for (const [label, contentType, payload] of WHOLE_BODIES)
      cases.push({ label: `upload ${label}`, path: basePath, query: '', contentType, payload });
  }
  return cases;
}

/** The operations of an OpenAPI 3 document (every version prefix is a path of its own). */
export function operationsOf(doc: { paths: Record<string, Record<string, any>> }): OpenApiOperation[] {
  const ops: OpenApiOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const params = (op.parameters ?? []) as Array<{ in: string; name: string; schema: JsonSchema }>;
      const content = op.requestBody?.content ?? {};
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
        body: content['application/json']?.schema,
        multipart: 'multipart/form-data' in content,
      });
    }
  }
  return ops;
}

export function urlOf(op: OpenApiOperation, c: FuzzCase): string {
  const path = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => c.path[name] ?? '1');
  return c.query ? `${path}?${c.query}` : path;
}
