// What an authoring agent reads before writing a document: the format described,
// the format as JSON Schema, and a complete example. The description is built from
// the same tables validation uses, so it cannot drift from what is checked.
import { documentJsonSchema, FAILURE_CODES, MAX_DOCUMENT_DEPTH, PORTS, SIDE_EFFECTING, STEP_CONFIG, STEP_TYPES } from '../core/automations/document.ts'
import { MAX_EXPRESSION_DEPTH, NAMESPACES } from '../core/automations/expressions.ts'
import { exampleDocument } from '../core/automations/example.ts'

export interface Resource {
  uri: string
  name: string
  title: string
  description: string
  mimeType: string
  text: () => string
}

function formatGuide(): string {
  return [
    '# Automation documents',
    '',
    'An automation is a JSON document: a name, an optional JSON Schema of its input (`inputs`), run settings (`config`),',
    'steps linked by named ports, and tests that run in mock mode. Its JSON Schema is the resource',
    '`tale://automations/document-schema`; a complete example is `tale://automations/example`.',
    '',
    '## Steps',
    '',
    'The first step runs first. `next` maps each port a step emits to the slug of the step that follows;',
    'a port with no entry ends the run. Every step must be reachable from the first.',
    '',
    '| type | ports | config |',
    '|---|---|---|',
    ...STEP_TYPES.map((type) => `| ${type} | ${PORTS[type].join(', ')} | ${STEP_CONFIG[type].replaceAll('|', '\\|')} |`),
    '',
    `Side-effecting steps (${[...SIDE_EFFECTING].join(', ')}) answer with their \`mock\` in mock runs and tests.`,
    '',
    '## Templates and expressions',
    '',
    'Strings in a step\'s config may hold `{{ expr }}` templates; `condition.expression`, `repeat.items` and',
    '`repeat.until` are bare expressions. Expressions are JSONata over these names:',
    NAMESPACES.map((name) => `\`${name}\``).join(', ') + ' (`steps.<slug>.output` is an earlier step\'s output,',
    '`config.<name>` a variable of `config.variables`). A string that is exactly one template yields the typed',
    'value; a reference that does not resolve fails the run with `node_error`.',
    '',
    '## Tests',
    '',
    '`tests[]` run with `automation_test`: `input`, `mocks` (outputs by step slug), `answers` (by approval slug:',
    '"approved" or "rejected"; by ask slug: the answer object) and `expect` (`status`, `output`, `failureCode`).',
    `Failure codes: ${FAILURE_CODES.join(', ')}.`,
    '',
    '## Limits',
    '',
    `At most 200 steps; arrays and objects nest at most ${MAX_DOCUMENT_DEPTH} levels; an expression's brackets nest at most`,
    `${MAX_EXPRESSION_DEPTH} levels. \`automation_validate\` reports every problem with its JSON path in one pass.`,
    '',
  ].join('\n')
}

export const resources: Resource[] = [
  {
    uri: 'tale://automations/format', name: 'automation-format', title: 'Automation document format',
    description: 'How automation documents are written: steps, ports, templates, tests and limits',
    mimeType: 'text/markdown', text: formatGuide,
  },
  {
    uri: 'tale://automations/document-schema', name: 'automation-document-schema', title: 'Automation document JSON Schema',
    description: 'The JSON Schema (2020-12) of an automation document',
    mimeType: 'application/schema+json', text: () => JSON.stringify(documentJsonSchema(), null, 2),
  },
  {
    uri: 'tale://automations/example', name: 'automation-example', title: 'Example automation document',
    description: 'A complete, valid document with an LLM step, a condition, an approval, an action and tests',
    mimeType: 'application/json', text: () => JSON.stringify(exampleDocument, null, 2),
  },
]
