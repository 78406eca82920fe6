// Rendering an automation's templates inside a JSON value (server/core/automations/expressions.ts).
import t from 'tap'
import { render } from '../../server/core/automations/expressions.ts'

t.test('a rendered object keeps every key of the document, an own __proto__ key included, as a key', async (t) => {
  const document = JSON.parse('{"__proto__":{"admin":true},"constructor":"{{ input.name }}","nested":{"__proto__":[1]}}')
  const rendered = await render(document, { input: { name: 'Ada' } }) as Record<string, unknown>
  t.same(Object.keys(rendered), ['__proto__', 'constructor', 'nested'])
  t.equal(Object.getPrototypeOf(rendered), Object.prototype, 'no prototype is set by the key')
  t.equal((rendered as { admin?: unknown }).admin, undefined)
  t.equal(rendered.constructor, 'Ada', 'the templates inside are rendered')
  t.equal(JSON.stringify(rendered), '{"__proto__":{"admin":true},"constructor":"Ada","nested":{"__proto__":[1]}}')
})
