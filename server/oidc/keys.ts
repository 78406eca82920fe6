// The issuer's RS256 signing keys, made with jose and kept in the database (private
// JWKs, app.issuer_signing_keys): the first is made on first use, `admin oidc
// rotate-keys` replaces it. Every process reads the published set before it signs or
// publishes, so a rotation takes effect everywhere at once.
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose'
import type { Sql } from '../core/db/connection.ts'

export const SIGNING_ALG = 'RS256'
// RFC 7518 asks for 2048 bits at least; keys are rotated (admin oidc rotate-keys), not kept for years.
const MODULUS_BITS = 2048

export type SigningKey = JWK & { kid: string }

export async function generateSigningKey(): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair(SIGNING_ALG, { modulusLength: MODULUS_BITS, extractable: true })
  const jwk = await exportJWK(privateKey)
  const kid = await calculateJwkThumbprint({ kty: jwk.kty!, n: jwk.n!, e: jwk.e! })
  return { ...jwk, kid, alg: SIGNING_ALG, use: 'sig' }
}

/** The published keys, the active (signing) one first; the first key is made here when there is none. */
export async function publishedKeys(requests: Sql): Promise<SigningKey[]> {
  const read = async (candidate: SigningKey | null) => {
    const [row] = await requests<{ keys: SigningKey[] }[]>`
      select app.issuer_keys(${candidate === null ? null : requests.json(candidate as never)}) as keys`
    return row!.keys
  }
  const keys = await read(null)
  return keys.length > 0 ? keys : read(await generateSigningKey())
}

/** The operator's rotation: a new active key; the previous one stays published for a while. */
export async function rotateSigningKeys(owner: Sql): Promise<{ kid: string; retired: string[]; removed: string[] }> {
  const key = await generateSigningKey()
  const [row] = await owner<{ result: { kid: string; retired: string[]; removed: string[] } }[]>`
    select app.operator_issuer_rotate_key(${key.kid}, ${owner.json(key as never)}) as result`
  return row!.result
}
