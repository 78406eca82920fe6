// JSON for a jsonb parameter. PostgreSQL's jsonb holds no NUL character and no
// unpaired surrogate, but a step's output, a fetched page or a model's answer may
// carry either (bytes from an endpoint, a model's broken escape), so both are stored
// as the replacement character rather than failing the write.
export function storable(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => typeof v === 'string' ? clean(v) : v)
}

const UNPAIRED = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]'
const hasUnpaired = new RegExp(UNPAIRED)
const everyUnpaired = new RegExp(UNPAIRED, 'g')

function clean(text: string): string {
  return text.includes('\u0000') || hasUnpaired.test(text)
    ? text.replaceAll('\u0000', '\ufffd').replace(everyUnpaired, '\ufffd') : text
}
