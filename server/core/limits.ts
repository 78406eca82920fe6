// The service's limits (upload lifetime and size, folder depth, page sizes, every
// rate budget), each with its unit and meaning. They live in db/limits.json, which
// the migrator also loads into app.limits for SQL (app.limit(name)), so TypeScript,
// SQL and the OpenAPI document read one figure.
import { readFileSync } from 'node:fs'
import * as v from 'valibot'

export const limitsFile = new URL('../../db/limits.json', import.meta.url)

const schema = v.record(v.pipe(v.string(), v.regex(/^[a-z][A-Za-z]*(\.[a-z][A-Za-z]*)+$/)), v.strictObject({
  value: v.pipe(v.number(), v.minValue(0)),
  unit: v.pipe(v.string(), v.minLength(1)),
  meaning: v.pipe(v.string(), v.minLength(1)),
}))

export type Limit = v.InferOutput<typeof schema>[string]

/** Parses the limits file; a malformed one stops start-up (and the migrator) with its issues. */
export function parseLimits(text: string): Readonly<Record<string, Limit>> {
  const result = v.safeParse(schema, JSON.parse(text))
  if (!result.success) {
    throw new Error(`db/limits.json: ${result.issues.map((i) => `${v.getDotPath(i) ?? '?'}: ${i.message}`).join('; ')}`)
  }
  return Object.freeze(result.output)
}

export const limits = parseLimits(readFileSync(limitsFile, 'utf8'))

/** A limit's value; an unknown name is a programming error, not a default. */
export function limit(name: string): number {
  const found = limits[name]
  if (!found) throw new Error(`unknown limit ${name}`)
  return found.value
}
