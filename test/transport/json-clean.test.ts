// The one walk over parsed JSON bodies (server/core/json-clean.ts): each kind of fault
// with its path, in values and keys, at any depth; and the shortcut that skips string
// checks only where the text cannot carry a NUL or a lone surrogate.
import t from 'tap'
import { findJsonFault } from '../../server/core/json-clean.ts'

const check = (text: string, options: { maxDepth?: number; safeIntegers?: boolean; withText?: boolean } = {}) =>
  findJsonFault(JSON.parse(text), {
    maxDepth: options.maxDepth ?? 64, safeIntegers: options.safeIntegers ?? true,
    ...(options.withText === false ? {} : { text }),
  })

t.test('clean bodies have no fault', async (t) => {
  for (const text of ['{}', '[]', 'null', '"text"', '12', '{"a":[1,{"b":"c\\u00e9\\ud83d\\ude00"}],"d":true}', '{"n":9007199254740991}']) {
    t.equal(check(text), null, text)
  }
})

t.test('each fault with the path of its value or key', async (t) => {
  t.same(check('{"a":{"b":["x","y\\u0000"]}}'), { kind: 'nul', path: 'a.b.1', message: 'NUL character' })
  t.same(check('{"a":{"k\\u0000ey":1}}'), { kind: 'nul', path: 'a.k\u0000ey', message: 'NUL character' }, 'in a key')
  t.same(check('{"a":["\\ud800"]}'), { kind: 'surrogate', path: 'a.0', message: 'unpaired surrogate' })
  t.same(check('{"\\udc00":1}'), { kind: 'surrogate', path: '\udc00', message: 'unpaired surrogate' }, 'a lone low half in a key')
  t.same(check('"\\u0000"'), { kind: 'nul', path: '', message: 'NUL character' }, 'the root itself')
  t.same(check('{"a":[1,9007199254740993]}'), { kind: 'integer', path: 'a.1', message: 'integer out of range' })
  t.same(check('{"a":-9007199254740993}'), { kind: 'integer', path: 'a', message: 'integer out of range' }, 'below -(2^53 - 1)')
  t.equal(check('{"a":9007199254740993}', { safeIntegers: false }), null, 'integers are left alone unless asked')
  t.equal(check('{"a":1.5e300}')?.kind, 'integer', 'a number written with an exponent is still an integer beyond 2^53 - 1')
})

t.test('depth: a container at the limit is refused at its path; one level less passes', async (t) => {
  const nested = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1)
  t.equal(check(nested(3), { maxDepth: 3 }), null, 'three levels with a limit of three')
  t.same(check(nested(4), { maxDepth: 3 }), { kind: 'depth', path: 'a.a.a', message: 'nested deeper than 3 levels' })
  t.same(check('[[[[1]]]]', { maxDepth: 3 }), { kind: 'depth', path: '0.0.0', message: 'nested deeper than 3 levels' }, 'arrays too')
  const deep = '['.repeat(100_000) + ']'.repeat(100_000)
  t.equal(check(deep, { maxDepth: 64 })?.kind, 'depth', 'a body 100,000 levels deep is refused without exhausting the stack')
})

t.test('the text shortcut', async (t) => {
  // A value that holds a NUL but whose given text has no escape for one: the walk
  // trusts the text, so the text must be the value's own.
  const value = { a: 'x\u0000' }
  t.equal(findJsonFault(value, { maxDepth: 64, safeIntegers: true, text: '{"a":"x"}' }), null, 'strings are skipped when the text has no suspicious escape')
  t.equal(findJsonFault(value, { maxDepth: 64, safeIntegers: true })?.kind, 'nul', 'without the text every string is checked')
  for (const escape of ['\\u0000', '\\uD800', '\\ud9ff', '\\uDBFF', '\\udc00', '\\uDFFF']) {
    const text = `{"a":"${escape}"}`
    t.not(check(text), null, `${escape} in the text is checked`)
  }
  t.equal(check('{"a":"\\\\u0000"}'), null, 'an escaped backslash before u0000 is text, and the check finds it clean')
  t.equal(check('{"a":"\\ud83d\\ude00"}'), null, 'a surrogate pair is checked and passes')
  t.equal(check('{"a":1e400}'), null, 'a number that parses to Infinity is no integer')
})
