// Templates and expressions of automation documents, evaluated by JSONata: a
// sandboxed expression language over JSON (no access to JavaScript, the process or
// the network), never eval.
//
// A template is a string with `{{ expr }}` parts. A string that is exactly one
// template yields the expression's typed value; otherwise the parts are rendered into
// the string. An expression that resolves to nothing fails: a reference the run
// cannot resolve is an error (node_error), never an empty string.
import jsonata from 'jsonata'

/** The names an expression may start from. */
export const NAMESPACES = ['input', 'config', 'steps', 'loop', 'secrets', 'run', 'now'] as const

const TEMPLATE = /\{\{([\s\S]*?)\}\}/g
const WHOLE = /^\s*\{\{([\s\S]*?)\}\}\s*$/

// Every evaluation is bounded: a runaway expression (endless recursion, a huge range)
// fails its step instead of holding the process.
const LIMITS = { timeout: 1000, stack: 500, sequence: 1_000_000 }

export class ExpressionError extends Error {
  override name = 'ExpressionError'
}

interface Node {
  type?: string
  value?: unknown
  steps?: Node[]
  [key: string]: unknown
}

/**
 * How deeply an expression's brackets may nest. JSONata parses recursively, so a
 * deeper expression would exhaust the stack; it is refused before parsing.
 */
export const MAX_EXPRESSION_DEPTH = 64

function bracketDepth(expression: string): number {
  let depth = 0
  let deepest = 0
  for (const char of expression) {
    if (char === '(' || char === '[' || char === '{') deepest = Math.max(deepest, ++depth)
    else if (char === ')' || char === ']' || char === '}') depth = Math.max(0, depth - 1)
  }
  return deepest
}

// An expression as messages quote it: long ones are cut.
const quoted = (expression: string) => {
  const text = expression.trim()
  return `"${text.length > 120 ? `${text.slice(0, 120)}…` : text}"`
}

const compiled = new Map<string, ReturnType<typeof jsonata>>()
function compile(expression: string): ReturnType<typeof jsonata> {
  let found = compiled.get(expression)
  if (!found) {
    if (bracketDepth(expression) > MAX_EXPRESSION_DEPTH) {
      throw new ExpressionError(`cannot parse ${quoted(expression)}: brackets nest deeper than ${MAX_EXPRESSION_DEPTH} levels`)
    }
    try {
      found = jsonata(expression, LIMITS)
    } catch (error) {
      throw new ExpressionError(`cannot parse ${quoted(expression)}: ${(error as Error).message}`)
    }
    if (compiled.size > 5000) compiled.clear()
    compiled.set(expression, found)
  }
  return found
}

/** The root names an expression reads (those outside any path's own steps). */
export function rootNames(expression: string): string[] {
  const names = new Set<string>()
  const visit = (node: unknown, relative: boolean): void => {
    if (Array.isArray(node)) return node.forEach((child) => visit(child, relative))
    if (!node || typeof node !== 'object') return
    const n = node as Node
    if (n.type === 'path' && Array.isArray(n.steps)) {
      const [first, ...rest] = n.steps
      if (!relative && first?.type === 'name') names.add(String(first.value))
      else visit(first, relative)
      // Names inside later steps and predicates are relative to the path.
      for (const step of rest) visit(step, true)
      return
    }
    if (n.type === 'name' && !relative) names.add(String(n.value))
    for (const [key, child] of Object.entries(n)) {
      if (key === 'position' || key === 'value' || key === 'type') continue
      visit(child, key === 'predicate' || key === 'stages' ? true : relative)
    }
  }
  visit(compile(expression).ast(), false)
  return [...names]
}

/** Every `{{ }}` expression inside a value (strings anywhere in objects and arrays). */
export function templateExpressions(value: unknown): string[] {
  if (typeof value === 'string') return [...value.matchAll(TEMPLATE)].map((m) => m[1]!)
  if (Array.isArray(value)) return value.flatMap(templateExpressions)
  if (value && typeof value === 'object') return Object.values(value).flatMap(templateExpressions)
  return []
}

export async function evaluate(expression: string, context: Record<string, unknown>): Promise<unknown> {
  let result: unknown
  try {
    result = await compile(expression).evaluate(context)
  } catch (error) {
    throw new ExpressionError(`${quoted(expression)} failed: ${(error as Error).message}`)
  }
  if (result === undefined) throw new ExpressionError(`${quoted(expression)} does not resolve to a value`)
  return plain(result)
}

/** Renders templates inside a value; strings without templates are left as they are. */
export async function render(value: unknown, context: Record<string, unknown>): Promise<unknown> {
  if (typeof value === 'string') {
    const whole = WHOLE.exec(value)
    if (whole && !whole[1]!.includes('}}')) return evaluate(whole[1]!, context)
    let rendered = ''
    let at = 0
    for (const match of value.matchAll(TEMPLATE)) {
      rendered += value.slice(at, match.index)
      const result = await evaluate(match[1]!, context)
      rendered += typeof result === 'string' ? result : JSON.stringify(result)
      at = match.index! + match[0].length
    }
    return rendered + value.slice(at)
  }
  if (Array.isArray(value)) return Promise.all(value.map((item) => render(item, context)))
  if (value && typeof value === 'object') {
    const entries: [string, unknown][] = []
    for (const [key, item] of Object.entries(value)) entries.push([key, await render(item, context)])
    // Each key defined as the object's own: an own "__proto__" key of a parsed
    // document stays a key, where assigning it would set the object's prototype.
    return Object.fromEntries(entries)
  }
  return value
}

// JSONata marks its sequences with extra properties; results are stored as JSON.
function plain(value: unknown): unknown {
  return value === null || typeof value !== 'object' ? value : JSON.parse(JSON.stringify(value))
}
