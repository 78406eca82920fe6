// The OLE compound file container of the legacy Office formats (doc, xls, ppt), and
// of password-protected Office Open XML files, which are stored encrypted inside one.
import CFB from 'cfb'
import { Unreadable } from './common.ts'

export type Container = CFB.CFB$Container

export function openContainer(bytes: Uint8Array, what: string): Container {
  try {
    return CFB.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), { type: 'buffer' })
  } catch {
    throw new Unreadable(`${what} is damaged (its container cannot be read)`)
  }
}

export function stream(container: Container, name: string): Uint8Array | undefined {
  const entry = CFB.find(container, name)
  if (!entry || entry.type !== 2 || !entry.content) return undefined
  const content = entry.content
  return content instanceof Uint8Array ? content : Uint8Array.from(content as ArrayLike<number>)
}

/** An Office Open XML file saved with a password (its package sits in EncryptedPackage). */
export function isEncryptedPackage(container: Container): boolean {
  return CFB.find(container, 'EncryptedPackage') !== null
}
