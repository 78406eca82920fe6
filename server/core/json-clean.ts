// One walk over a parsed JSON value for what JSON allows but the service cannot take:
// nesting deeper than the serializers and validators on the way survive, NUL
// characters and unpaired surrogates (PostgreSQL text holds neither, in values or
// keys), and, where asked, integers beyond 2^53 - 1. Shared by the API's body parser
// and the internal services'; each words its own refusal.
//
// It runs on every JSON body, so it is cheap where bodies are clean: a path is built
// only for a container it goes into or a value it refuses, and strings are not
// looked at when the body's text holds no escape that could make one of those
// characters (JSON text carries a NUL or a lone surrogate only as a \u escape, since
// strict UTF-8 decoding refuses a lone surrogate and JSON refuses a raw NUL).

export type JsonFaultKind = 'nul' | 'surrogate' | 'depth' | 'integer'

export interface JsonFault {
  kind: JsonFaultKind
  /** Dot path of the value or key at fault ('' for the root). */
  path: string
  /** A short description, for the message. */
  message: string
}

/**
 * How deeply a body's arrays and objects may nest (a top-level object is level 1).
 * Deeper bodies are refused before anything walks them recursively: the serializers
 * on the way to SQL and the validators overflow the stack a few thousand levels down.
 * An automation document sent over MCP sits three levels down its JSON-RPC message
 * and nests well within the rest.
 */
export const MAX_JSON_DEPTH = 64

export interface JsonFaultOptions {
  /** Levels of arrays and objects allowed; MAX_JSON_DEPTH unless told. */
  maxDepth?: number
  /** Refuses integers beyond Number.MAX_SAFE_INTEGER. */
  safeIntegers: boolean
  /** The text the value was parsed from: strings are checked only when it holds a suspicious escape. */
  text?: string
}

/** A \u escape of NUL or of any surrogate half. */
const SUSPICIOUS_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/

const at = (path: string, key: string | number) => (path === '' ? String(key) : `${path}.${key}`)

function stringFault(text: string, path: () => string): JsonFault | null {
  if (text.includes('\u0000')) return { kind: 'nul', path: path(), message: 'NUL character' }
  if (!text.isWellFormed()) return { kind: 'surrogate', path: path(), message: 'unpaired surrogate' }
  return null
}

/** The first fault found, or null. Walked without recursion, so no nesting exhausts the stack. */
export function findJsonFault(root: unknown, options: JsonFaultOptions): JsonFault | null {
  const { maxDepth = MAX_JSON_DEPTH, safeIntegers } = options
  const checkStrings = options.text === undefined || SUSPICIOUS_ESCAPE.test(options.text)
  const pending: [object, string, number][] = []
  // An array element's key is its index, made a string only for a path.
  const visit = (value: unknown, parent: string, key: string | number | null, depth: number): JsonFault | null => {
    if (typeof value === 'string') {
      return checkStrings ? stringFault(value, () => (key === null ? parent : at(parent, key))) : null
    }
    if (typeof value === 'number') {
      return safeIntegers && Number.isInteger(value) && !Number.isSafeInteger(value)
        ? { kind: 'integer', path: key === null ? parent : at(parent, key), message: 'integer out of range' }
        : null
    }
    if (value !== null && typeof value === 'object') {
      const path = key === null ? parent : at(parent, key)
      if (depth === maxDepth) return { kind: 'depth', path, message: `nested deeper than ${maxDepth} levels` }
      pending.push([value, path, depth])
    }
    return null
  }
  let fault = visit(root, '', null, 0)
  while (fault === null && pending.length > 0) {
    const [container, path, depth] = pending.pop()!
    if (Array.isArray(container)) {
      for (let index = 0; index < container.length && fault === null; index++) {
        fault = visit(container[index], path, index, depth + 1)
      }
    } else {
      for (const key of Object.keys(container)) {
        if (checkStrings) fault = stringFault(key, () => at(path, key))
        if (fault === null) fault = visit((container as Record<string, unknown>)[key], path, key, depth + 1)
        if (fault !== null) break
      }
    }
  }
  return fault
}
