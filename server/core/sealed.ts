// Sealing secrets at rest (browser sessions' cookies): AES-256-GCM with a key from the
// environment, done in the process that holds the key, so PostgreSQL only ever stores
// and logs ciphertext. The HTTP side seals, the worker and the internal services open.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'

const VERSION = 1
const NONCE_BYTES = 12
const TAG_BYTES = 16

/** A key from its base64 form (32 bytes); null for anything else. */
export function parseSealingKey(base64: string): Buffer | null {
  if (!/^[A-Za-z0-9+/]{43}=$/.test(base64)) return null
  const key = Buffer.from(base64, 'base64')
  return key.length === 32 ? key : null
}

/** Names a key without revealing it: which key sealed a row. */
export function sealingKeyId(key: Buffer): string {
  return createHash('sha256').update('tale-sealing-key').update(key).digest('hex').slice(0, 16)
}

/**
 * Version, nonce, tag and ciphertext in one buffer. `context` is bound as additional
 * data (a row's id), so sealed bytes moved to another row do not open.
 */
export function seal(key: Buffer, plaintext: string | Buffer, context: string): Buffer {
  const nonce = randomBytes(NONCE_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES })
  cipher.setAAD(Buffer.from(context, 'utf8'))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([Buffer.from([VERSION]), nonce, cipher.getAuthTag(), body])
}

/** The plaintext of sealed bytes; throws when the key, the context or the bytes are not the sealing ones. */
export function unseal(key: Buffer, sealed: Buffer, context: string): Buffer {
  if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed[0] !== VERSION) throw new Error('not sealed bytes of a known version')
  const nonce = sealed.subarray(1, 1 + NONCE_BYTES)
  const tag = sealed.subarray(1 + NONCE_BYTES, 1 + NONCE_BYTES + TAG_BYTES)
  const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES })
  decipher.setAAD(Buffer.from(context, 'utf8'))
  decipher.setAuthTag(tag)
  return Buffer.concat([decipher.update(sealed.subarray(1 + NONCE_BYTES + TAG_BYTES)), decipher.final()])
}
