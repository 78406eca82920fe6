// Which addresses an outbound fetch may connect to. "Public" is decided where the
// connection is made: a connection's lookup refuses every name that resolves to an
// internal address, so a name that changes its answer between a check and the
// connect (DNS rebinding) is refused too. IP literals never reach a lookup, so a
// caller checks them with checkHost before connecting. An operator's allowlist admits
// chosen internal addresses (a crawler reaching an intranet site, a test's loopback).
import dns from 'node:dns'
import net from 'node:net'

const internalRanges = (() => {
  const list = new net.BlockList()
  for (const [prefix, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
    ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
    list.addSubnet(prefix, bits, 'ipv4')
  }
  // ::/96 holds the unspecified and loopback addresses and the IPv4-compatible form
  // (::127.0.0.1) that would otherwise reach an IPv4 host. 6to4 (2002::/16) and Teredo
  // (2001::/32) carry an IPv4 address inside too; fec0::/10 is the old site-local range.
  for (const [prefix, bits] of [['::', 96], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['64:ff9b::', 96],
    ['2001:db8::', 32], ['2002::', 16], ['2001::', 32]] as const) {
    list.addSubnet(prefix, bits, 'ipv6')
  }
  return list
})()

/** An IPv4-mapped IPv6 address (::ffff:10.0.0.1) reaches the IPv4 host, so it is judged as that host. */
function unmapped(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return { address: mapped[1]!, family: 'ipv4' }
  return { address, family: net.isIPv6(address) ? 'ipv6' : 'ipv4' }
}

/** Whether an address is one a public page cannot live at. */
export function isInternalAddress(address: string): boolean {
  const { address: plain, family } = unmapped(address)
  return internalRanges.check(plain, family)
}

/**
 * The allowlist from its setting: comma-separated addresses or CIDR ranges
 * (`127.0.0.1, 10.0.0.0/8, ::1/128`). A malformed entry is an operator's mistake
 * that must not silently admit nothing, so it throws.
 */
export function parseAllowlist(value: string | undefined): net.BlockList {
  const list = new net.BlockList()
  for (const raw of (value ?? '').split(',')) {
    const entry = raw.trim()
    if (!entry) continue
    const [address = '', bits, extra] = entry.split('/')
    const version = net.isIP(address)
    const prefix = bits === undefined ? null : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN
    if (!version || extra !== undefined || Number.isNaN(prefix) || (prefix !== null && prefix > (version === 4 ? 32 : 128))) {
      throw new Error(`the allowlist entry "${entry}" is not an IP address or a CIDR range (such as 10.0.0.0/8)`)
    }
    const family = version === 4 ? 'ipv4' : 'ipv6'
    if (prefix === null) list.addAddress(address, family)
    else list.addSubnet(address, prefix, family)
  }
  return list
}

function admitted(address: string, allow: net.BlockList | undefined): boolean {
  if (!isInternalAddress(address)) return true
  if (!allow) return false
  const { address: plain, family } = unmapped(address)
  return allow.check(plain, family) || allow.check(address, net.isIPv6(address) ? 'ipv6' : 'ipv4')
}

/** The code a refused connection's error carries, so a caller can tell it from a network failure. */
export const NOT_PUBLIC = 'ERR_NOT_PUBLIC_ADDRESS'

export function isNotPublicError(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === NOT_PUBLIC
}

function notPublic(hostname: string): Error {
  return Object.assign(new Error(`${hostname} is not a public address`), { code: NOT_PUBLIC })
}

/**
 * Why a URL's host may not be connected to, or null. Only IP literals are judged
 * here; names are judged by guardedLookup as the connection resolves them.
 */
export function checkHost(hostname: string, allow?: net.BlockList): string | null {
  const host = hostname.replace(/^\[|\]$/g, '')
  if (net.isIP(host) && !admitted(host, allow)) return `${host} is not a public address`
  return null
}

/**
 * A connection's lookup that resolves every address of the name and refuses the name
 * when any of them is internal and not admitted: connecting to the first public one
 * would still let a later attempt (happy eyeballs tries them all) reach the inside.
 */
export function guardedLookup(allow?: net.BlockList): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 4)
      const list = addresses as dns.LookupAddress[]
      if (list.length === 0 || list.some((a) => !admitted(a.address, allow))) return callback(notPublic(hostname), '', 4)
      if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list)
      callback(null, list[0]!.address, list[0]!.family)
    })
  }
}
