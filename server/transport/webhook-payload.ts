// A webhook body as the run's payload: JSON when it parses as JSON, else its text.
// Senders are other systems, not clients of this API, so what the JSON transport
// refuses (NUL characters, unpaired surrogates, broken UTF-8) is made storable
// instead: jsonb holds none of them, and the run engine stores a NUL as U+FFFD too.
// JSON nested past the transport's depth is kept as its text, like any body that is
// not JSON the service can hold: a sender cannot be asked to change its format, and
// nothing walks it recursively.
import { MAX_BODY_DEPTH } from './json-body.ts'

/** Thrown inside cleaned() when the JSON nests too deep to be kept as JSON. */
const TOO_DEEP = Symbol('too deep')

const lenient = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false })

const storable = (text: string) => (text.includes('\u0000') ? text.replaceAll('\u0000', '\ufffd') : text).toWellFormed()

export function webhookPayload(raw: Buffer): unknown {
  const text = lenient.decode(raw)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return storable(text)
  }
  try {
    return cleaned(value)
  } catch (error) {
    if (error === TOO_DEEP) return storable(text)
    throw error
  }
}

// Iterative, so a deeply nested body cannot exhaust the stack; strings and keys are
// rewritten in place (the value was just parsed and belongs to nobody else).
function cleaned(root: unknown): unknown {
  if (typeof root === 'string') return storable(root)
  const pending: [unknown, string, number][] = [[root, '', 0]]
  while (pending.length > 0) {
    const [value, path, depth] = pending.pop()!
    if (value === null || typeof value !== 'object') continue
    if (depth === MAX_BODY_DEPTH) throw TOO_DEEP
    if (Array.isArray(value)) {
      value.forEach((item, index) => {
        if (typeof item === 'string') value[index] = storable(item)
        else pending.push([item, join(path, String(index)), depth + 1])
      })
      continue
    }
    const record = value as Record<string, unknown>
    for (const key of Object.keys(record)) {
      const item = record[key]
      const fixedItem = typeof item === 'string' ? storable(item) : item
      const fixed = storable(key)
      if (fixed !== key) {
        // A rewritten key holds U+FFFD, so it is never __proto__.
        delete record[key]
        record[fixed] = fixedItem
      } else if (fixedItem !== item) {
        record[key] = fixedItem
      }
      if (typeof item !== 'string') pending.push([item, join(path, fixed), depth + 1])
    }
  }
  return root
}

const join = (path: string, key: string) => (path === '' ? key : `${path}.${key}`)
