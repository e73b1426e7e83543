import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import fastJsonStringify from 'fast-json-stringify';
import { Type } from 'typebox';
import { forSerialization } from '../src/api/serialization.js';

/**
 * Response schemas are rewritten for fast-json-stringify (api/serialization.ts) so that nullable
 * fields and scalar unions are serialized with type checks instead of a validator call per value.
 * The JSON must be exactly what the schema as written produces.
 */
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const Item = Type.Object({
  id: Type.Union([Type.Integer(), Type.String()], { description: 'number or text' }),
  name: Nullable(Type.String({ description: 'a name' })),
  count: Type.Union([Type.Null(), Type.Integer()]),
  nested: Nullable(
    Type.Object({ text: Type.String(), tags: Type.Array(Type.String()), at: Nullable(Type.Number()) }, { description: 'quoted' }),
  ),
  list: Nullable(Type.Array(Type.Integer())),
  either: Type.Union([Type.Object({ a: Type.String() }), Type.Object({ b: Type.Integer() })]),
});
const Page = Type.Object({ items: Type.Array(Item), total: Nullable(Type.Integer()) });

const nullable = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });
const item = fc.record({
  id: fc.oneof(fc.integer(), fc.string()),
  name: nullable(fc.string()),
  count: nullable(fc.integer()),
  nested: nullable(
    fc.record({
      text: fc.string(),
      tags: fc.array(fc.string()),
      at: nullable(fc.double({ noNaN: true, noDefaultInfinity: true }).map((v) => (Object.is(v, -0) ? 0 : v))),
    }),
  ),
  list: nullable(fc.array(fc.integer())),
  either: fc.oneof(fc.record({ a: fc.string() }), fc.record({ b: fc.integer() })),
});

describe('response schemas for serialization', () => {
  const asWritten = fastJsonStringify(Page as object);
  const rewritten = fastJsonStringify(forSerialization(Page) as object);

  it('serializes exactly as the schema as written', () => {
    fc.assert(
      fc.property(fc.record({ items: fc.array(item, { maxLength: 5 }), total: nullable(fc.integer()) }), (page) => {
        expect(rewritten(page)).toBe(asWritten(page));
        expect(JSON.parse(rewritten(page))).toEqual(page);
      }),
    );
  });

  it('turns nullable fields and scalar unions into type checks, and leaves other unions', () => {
    const out = forSerialization(Item) as { properties: Record<string, Record<string, unknown>> };
    expect(out.properties.id).toEqual({ type: ['integer', 'string'], description: 'number or text' });
    expect(out.properties.name).toEqual({ type: 'string', description: 'a name', nullable: true });
    expect(out.properties.count).toEqual({ type: 'integer', nullable: true });
    expect(out.properties.nested).toMatchObject({ type: 'object', nullable: true, description: 'quoted' });
    expect((out.properties.nested.properties as Record<string, unknown>).at).toEqual({ type: 'number', nullable: true });
    expect(out.properties.either.anyOf).toHaveLength(2);
  });

  it('leaves the schema it was given unchanged', () => {
    const before = JSON.stringify(Page);
    forSerialization(Page);
    expect(JSON.stringify(Page)).toBe(before);
  });
});
