// Named schemas of the OpenAPI document (components/schemas). A route file names a
// shape where it declares it; every use of that same schema object then becomes a
// $ref, so generated clients get one type per concept (Run, RunStatus, ErrorCode)
// instead of an anonymous copy per operation.
import type { Schema } from '../transport/validation.ts'

const named = new Map<string, Schema>()

/**
 * Names a response shape. It is converted as the server writes it (output types), so
 * it must hold no transformation; request shapes stay anonymous.
 */
export function component<S extends Schema>(name: string, schema: S): S {
  const existing = named.get(name)
  if (existing && existing !== schema) throw new Error(`two schemas are named ${name}`)
  named.set(name, schema)
  return schema
}

export function components(): Record<string, Schema> {
  return Object.fromEntries(named)
}
