// Shared field shapes of request bodies.
import t from 'tap'
import * as v from 'valibot'
import { check, MAX_TIMESTAMP, timestamp } from '../../server/transport/validation.ts'

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
