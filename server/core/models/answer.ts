// A model's answer as a step's output: text as it is, or JSON parsed and checked
// against the step's outputSchema. llm steps and agent steps read answers the same way.
import { schemaViolations } from '../automations/document.ts'

export type ReadAnswer = { ok: true; output: unknown } | { ok: false; detail: string }

export function readAnswer(text: string, json: boolean, outputSchema: unknown, who = 'model'): ReadAnswer {
  if (!json) return { ok: true, output: text }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return { ok: false, detail: `the ${who}'s answer is not JSON` }
  }
  const problems = outputSchema === undefined ? [] : schemaViolations(outputSchema, parsed, 'output')
  if (problems.length > 0) {
    return { ok: false, detail: `the ${who}'s answer does not match outputSchema: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}` }
  }
  return { ok: true, output: parsed }
}
