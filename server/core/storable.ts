// JSON for a jsonb parameter. PostgreSQL's jsonb holds no NUL character, but a step's
// output, a fetched page or a model's answer may (bytes from an endpoint), so NULs are
// stored as the replacement character.
export function storable(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'string' && v.includes('\u0000') ? v.replaceAll('\u0000', '\ufffd') : v)
}
