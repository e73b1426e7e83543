/**
 * `make()`'s value for `key`, made at the first call and kept in `cache` for the next: statements
 * built once per shape (search), batch queues once per database (rate limits, widget sessions).
 */
export function kept<K, V>(cache: { get(key: K): V | undefined; set(key: K, value: V): unknown }, key: K, make: () => V): V {
  let value = cache.get(key);
  if (value === undefined) {
    value = make();
    cache.set(key, value);
  }
  return value;
}
