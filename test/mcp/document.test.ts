// The automation document format as authoring agents learn it: its JSON Schema, the
// example served beside it, and validation that reports every problem in one pass.
import t from 'tap'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { documentJsonSchema, MAX_DOCUMENT_DEPTH, validateDocument } from '../../server/core/automations/document.ts'
import { MAX_EXPRESSION_DEPTH } from '../../server/core/automations/expressions.ts'
import { exampleDocument } from '../../server/core/automations/example.ts'
import { runTest } from '../../server/core/engine/test-runner.ts'

const clone = <T>(value: T): T => structuredClone(value)
const paths = (document: unknown) => {
  const checked = validateDocument(document)
  return checked.ok ? [] : checked.problems.map((p) => p.path)
}

t.test('the JSON Schema accepts the example and refuses broken documents', async (t) => {
  const validate = new Ajv2020({ allErrors: true }).compile(documentJsonSchema())
  t.ok(validate(exampleDocument), `the example matches (${JSON.stringify(validate.errors)})`)
  const broken: [string, (d: any) => void][] = [
    ['an unknown step type', (d) => { d.steps[0].type = 'teleport' }],
    ['no steps', (d) => { d.steps = [] }],
    ['an unknown key', (d) => { d.colour = 'blue' }],
    ['a name with "__"', (d) => { d.name = 'sales__lead' }],
    ['a slug starting with a digit', (d) => { d.steps[0].slug = '1st' }],
    ['a link that is not a string', (d) => { d.steps[0].next.success = 3 }],
    ['a test without a name', (d) => { delete d.tests[0].name }],
  ]
  for (const [label, breakIt] of broken) {
    const document = clone(exampleDocument) as any
    breakIt(document)
    t.notOk(validate(document), `${label} does not match`)
  }
})

t.test('the example is valid and its own tests pass', async (t) => {
  const checked = validateDocument(exampleDocument)
  t.ok(checked.ok, `valid (${JSON.stringify(checked.ok ? [] : checked.problems)})`)
  if (!checked.ok) return
  t.ok(checked.document.tests!.length >= 2, 'the example has tests')
  for (const test of checked.document.tests!) {
    const result = await runTest(checked.document, test, checked.document.name)
    t.ok(result.passed, `${test.name} (${result.problems.join('; ')})`)
  }
})

t.test('validation reports shape, link, port, reachability, template and test problems in one pass', async (t) => {
  const document = {
    name: 'ops/broken',
    inputs: { type: 'object', properties: { n: { type: 'nonsense' } } },
    steps: [
      { slug: 'a', type: 'set', config: { values: { x: '{{ bogus.value }}' } }, next: { success: 'missing', nope: 'b' } },
      { slug: 'b', type: 'teleport', config: { prompt: '{{ ghost.name }}' }, next: { success: 'nowhere' } },
      { slug: 'c', type: 'condition', config: { expression: 'input.x > 1' }, next: { true: 'a' } },
      { slug: 'a', type: 'output', config: { mapping: {} } },
    ],
    tests: [{ name: 't', mocks: { ghost: 1 } }],
  }
  const checked = validateDocument(document)
  t.notOk(checked.ok)
  const problems = checked.ok ? [] : checked.problems
  const at = (path: string) => problems.filter((p) => p.path === path).map((p) => p.message).join(' | ')
  t.match(at('steps.1.type'), /must be one of/, 'the unknown step type')
  t.match(at('steps.0.next.success'), /links to "missing"/, 'a link to a missing slug')
  t.match(at('steps.1.next.success'), /links to "nowhere"/, 'a link from the step of unknown type')
  t.match(at('steps.0.next.nope'), /unknown port/, 'an unknown port')
  t.match(at('steps.0.config.values'), /unknown template namespace "bogus"/, 'a template namespace')
  t.match(at('steps.1.config.prompt'), /unknown template namespace "ghost"/, 'a template in the step of unknown type')
  t.match(at('steps.2'), /unreachable/, 'an unreachable step')
  t.match(at('steps.3.slug'), /already the slug/, 'a duplicate slug')
  t.match(at('inputs'), /not a valid JSON Schema/, 'an invalid inputs schema')
  t.match(at('tests.0.mocks.ghost'), /no step's slug/, 'a mock for a missing step')
  t.equal(new Set(problems.map((p) => `${p.path} ${p.message}`)).size, problems.length, 'no problem is reported twice')
})

t.test('a document nested too deep is one problem with its path, found without overflowing', async (t) => {
  const deep = (levels: number) => {
    let value: unknown = 'x'
    for (let i = 0; i < levels; i++) value = [value]
    return value
  }
  for (const levels of [MAX_DOCUMENT_DEPTH - 2, 5000]) {
    const document = { ...clone(exampleDocument), config: { variables: { deep: deep(levels) } } }
    const checked = validateDocument(document)
    t.notOk(checked.ok, `${levels} levels inside variables are refused`)
    const problems = checked.ok ? [] : checked.problems
    t.equal(problems.length, 1, 'one problem')
    t.equal(problems[0]?.path, `config.variables.deep${'.0'.repeat(MAX_DOCUMENT_DEPTH - 3)}`, 'at the first level too deep')
    t.match(problems[0]?.message, `deeper than ${MAX_DOCUMENT_DEPTH} levels`)
  }
  const within = { ...clone(exampleDocument), config: { variables: { deep: deep(MAX_DOCUMENT_DEPTH - 3) } } }
  t.ok(validateDocument(within).ok, `a document ${MAX_DOCUMENT_DEPTH} levels deep is valid`)
})

t.test('an expression nested too deep is a problem with its path, not a stack overflow', async (t) => {
  const document = clone(exampleDocument) as any
  const levels = 5000
  document.steps[1].config.expression = '('.repeat(levels) + 'input.x' + ')'.repeat(levels)
  const checked = validateDocument(document)
  const problem = checked.ok ? undefined : checked.problems.find((p) => p.path === 'steps.1.config.expression')
  t.match(problem?.message, `nest deeper than ${MAX_EXPRESSION_DEPTH} levels`)
  t.notMatch(problem?.message, /call stack/i)
  t.ok(problem!.message.length < 400, 'the message quotes the expression briefly')
})
