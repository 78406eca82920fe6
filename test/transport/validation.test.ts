// Shared field shapes of request bodies.
import t from 'tap'
import * as v from 'valibot'
import { check, jsonObject, MAX_TIMESTAMP, timestamp } from '../../server/transport/validation.ts'

t.test('timestamps are whole epoch milliseconds from 0 to 8640000000000000', async (t) => {
  const body = v.strictObject({ expiresAt: timestamp })
  for (const ok of [0, 1, Date.now(), MAX_TIMESTAMP]) {
    t.ok(check(body, { expiresAt: ok }).ok, `${ok} is accepted`)
  }
  for (const bad of [-1, MAX_TIMESTAMP + 1, 1.5, Number.NaN, '1700000000000', null]) {
    const result = check(body, { expiresAt: bad })
    t.notOk(result.ok, `${String(bad)} is refused`)
    if (!result.ok) t.equal(result.issues[0]!.path, 'expiresAt', 'the issue names the field')
  }
})

t.test('an unknown key is named in the issue', async (t) => {
  const result = check(v.strictObject({ name: v.string() }), { name: 'x', colour: 'red' })
  t.notOk(result.ok)
  if (!result.ok) t.same(result.issues, [{ path: 'colour', message: 'unknown key "colour"' }])
})

t.test('a free-form JSON object is taken whole, whatever its keys are named, and never an array', async (t) => {
  const body = v.strictObject({ attributes: jsonObject })
  const sent = JSON.parse('{"attributes":{"constructor":"Bob","prototype":1,"__proto__":{"admin":true},"plan":"team"}}')
  const result = check(body, sent)
  t.ok(result.ok)
  if (result.ok) {
    t.equal(result.value.attributes, sent.attributes, 'passed on as parsed, not copied')
    t.equal(JSON.stringify(result.value), JSON.stringify(sent), 'no key is left out')
    t.equal(Object.getPrototypeOf(result.value.attributes), Object.prototype, 'an own __proto__ key sets no prototype')
  }
  for (const bad of [[], [1], 'x', 1, null]) {
    const refused = check(body, { attributes: bad })
    t.notOk(refused.ok, `${JSON.stringify(bad)} is refused`)
    if (!refused.ok) t.same(refused.issues, [{ path: 'attributes', message: 'must be an object' }])
  }
})
