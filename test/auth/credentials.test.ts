// API keys and password hashes.
import t from 'tap'
import { API_KEY_PREFIX, generateApiKey, hashApiKey, hashPassword, verifyPassword } from '../../server/auth/credentials.ts'

t.test('API keys are long random strings; only their hash is kept', async (t) => {
  const a = generateApiKey()
  const b = generateApiKey()
  t.not(a, b)
  t.ok(a.startsWith(API_KEY_PREFIX))
  t.ok(a.length >= API_KEY_PREFIX.length + 43, '256 bits of randomness')
  t.equal(hashApiKey(a), hashApiKey(a), 'the hash is stable, so lookups can use an index')
  t.not(hashApiKey(a), hashApiKey(b))
  t.notMatch(hashApiKey(a), a.slice(API_KEY_PREFIX.length), 'the hash does not contain the key')
})

t.test('passwords: a salted memory-hard hash that verifies only the right password', async (t) => {
  const first = await hashPassword('correct horse')
  const second = await hashPassword('correct horse')
  t.match(first, /^scrypt\$65536\$8\$1\$/)
  t.not(first, second, 'salted: the same password hashes differently')
  t.equal(await verifyPassword('correct horse', first), true)
  t.equal(await verifyPassword('correct horse', second), true)
  t.equal(await verifyPassword('Correct horse', first), false)
  t.equal(await verifyPassword('correct horse', 'md5$abc'), false, 'an unknown scheme never verifies')
  t.equal(await verifyPassword('correct horse', 'scrypt$65536$8$1$'), false, 'a truncated hash never verifies')
})
