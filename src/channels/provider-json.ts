/**
 * A provider's JSON (a webhook body, an API answer) as received. Channels read it field by field
 * through runtime guards (`isObject`, `str`, `isInt`) and never trust its shape, so its fields stay
 * untyped here rather than get types the provider does not promise.
 */
// biome-ignore lint/suspicious/noExplicitAny: the shape is checked at run time, field by field, where it is read
export type ProviderJson = Record<string, any>;
