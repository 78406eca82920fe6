// Shape checks with valibot; every refusal lists its issues with dotted paths.
import * as v from 'valibot'
import type { Issue } from './errors.ts'

export type Schema = v.GenericSchema<unknown, unknown>

export function issuesOf(issues: readonly v.BaseIssue<unknown>[]): Issue[] {
  return issues.map((issue) => {
    const path = v.getDotPath(issue) ?? ''
    // valibot reports an unknown key of a strict object at the key's own path.
    if (issue.kind === 'schema' && issue.type === 'strict_object' && issue.expected === 'never') {
      return { path, message: `unknown key "${path.split('.').pop()}"` }
    }
    return { path, message: issue.message }
  })
}

export function check<S extends Schema>(schema: S, value: unknown): { ok: true; value: v.InferOutput<S> } | { ok: false; issues: Issue[] } {
  const result = v.safeParse(schema, value)
  return result.success ? { ok: true, value: result.output as v.InferOutput<S> } : { ok: false, issues: issuesOf(result.issues) }
}

// Shared field shapes.
// How the document describes a shape whose check does not convert to JSON Schema.
const wireSchemas = new WeakMap<Schema, Record<string, unknown>>()

/** The JSON Schema the document gives a shape instead of converting it. */
export const wireSchema = (schema: Schema): Record<string, unknown> | undefined => wireSchemas.get(schema)

/**
 * An integer query parameter handed on as the string sent, for an operation whose own
 * rules answer a non-integer (the notification export's INVALID_LIMIT); documented as
 * an integer all the same.
 */
export function integerText(min: number): v.StringSchema<undefined> {
  const text = v.string()
  wireSchemas.set(text, { type: 'integer', minimum: min })
  return text
}

/** An integer sent as a query string. Any length of digits: a value above an operation's ceiling is clamped there. */
export function integerParam(min: number): Schema {
  // The pipe's first schema is marked (a pipe itself is never offered for
  // overriding), and the digits are checked with check, not regex, so no string
  // pattern reaches the document.
  return v.pipe(integerText(min), v.check((s) => /^-?\d+$/.test(s), 'must be an integer'), v.transform(Number), v.number(), v.minValue(min))
}

export const uuidParam = v.pipe(v.string(), v.uuid('must be an identifier'))

// valibot's record and object schemas take an array (as an object of its indexes),
// so the array is refused before them.
const notArray = v.custom<Record<string, unknown>>((value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  'must be an object')
wireSchemas.set(notArray, { type: 'object' })

/**
 * A JSON object, never an array, passed on as it was parsed. (valibot's record would
 * copy every object, and leave out of the copy any key named __proto__, constructor
 * or prototype: a client's data losing keys without a word. Nothing copies a body's
 * objects by assignment, where an own __proto__ key could set a prototype.)
 */
export const jsonObject = notArray

/** A timestamp sent by a client: whole epoch milliseconds from 0 to 8640000000000000. */
export const MAX_TIMESTAMP = 8_640_000_000_000_000
export const timestamp = v.pipe(
  v.number('must be epoch milliseconds'),
  v.integer('must be a whole number of milliseconds'),
  v.minValue(0, 'must not be before 1970-01-01'),
  v.maxValue(MAX_TIMESTAMP, `must be at most ${MAX_TIMESTAMP}`),
)
