// API keys and passwords. Keys are 256 random bits; only their sha256 is stored,
// which is safe for secrets of that entropy and lets a lookup use an index.
// Passwords use scrypt, Node's built-in memory-hard KDF.
import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import { promisify } from 'node:util'

const scryptAsync = promisify(scrypt) as (
  password: string, salt: Buffer, keylen: number, options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>

export const API_KEY_PREFIX = 'tale_'

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url')
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex')
}

// 64 MiB per hash: N=2^16, r=8.
const SCRYPT = { N: 1 << 16, r: 8, p: 1 }
const KEY_LENGTH = 32

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const derived = await scryptAsync(password.normalize('NFKC'), salt, KEY_LENGTH, { ...SCRYPT, maxmem: 256 * 1024 * 1024 })
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), derived.toString('base64')].join('$')
}

export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const [scheme, n, r, p, salt, expected] = encoded.split('$')
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !expected) return false
  const wanted = Buffer.from(expected, 'base64')
  const derived = await scryptAsync(password.normalize('NFKC'), Buffer.from(salt, 'base64'), wanted.length, {
    N: Number(n), r: Number(r), p: Number(p), maxmem: 256 * 1024 * 1024,
  })
  return timingSafeEqual(derived, wanted)
}
