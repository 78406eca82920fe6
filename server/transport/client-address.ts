// The address a request came from, for the budgets keyed by it (failed
// authentication, sign-in, webhook senders) and the sessions' record. Behind a
// reverse proxy (compose runs the API replicas behind nginx) the socket's peer is the
// proxy for every client, so one abuser would spend everyone's budget: when the peer
// is a proxy the operator trusts (TRUSTED_PROXIES), the address is read from
// X-Forwarded-For instead, right to left, skipping the trusted hops. Entries a client
// wrote itself sit left of the first untrusted hop and are never believed.
import net from 'node:net'
import type { IncomingMessage } from 'node:http'
import { parseAllowlist } from '../core/web/guard.ts'

/** What the address is read from: a request, or anything with its socket's peer. */
type Peer = { socket: { remoteAddress?: string } }

const resolved = new WeakMap<Peer, string>()

/** ::ffff:10.0.0.1 as 10.0.0.1, so an IPv4 proxy matches whichever way the socket reports it. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address
}

function trusted(networks: net.BlockList, address: string): boolean {
  const family = net.isIP(address)
  return family !== 0 && networks.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/** The trusted proxies' networks (TRUSTED_PROXIES, validated with the configuration); null when none. */
export function trustedProxies(setting: string | undefined): net.BlockList | null {
  return setting ? parseAllowlist(setting) : null
}

/** Works out and remembers the request's client address; called once, where the request arrives. */
export function resolveClientAddress(req: IncomingMessage, networks: net.BlockList | null): string {
  let address = plain(req.socket.remoteAddress ?? 'unknown')
  if (networks && trusted(networks, address)) {
    const header = req.headers['x-forwarded-for']
    const hops = (Array.isArray(header) ? header.join(',') : header ?? '').split(',').map((hop) => plain(hop.trim()))
    while (hops.length > 0 && trusted(networks, address)) {
      const hop = hops.pop()!
      // A hop that is no address ends the walk at the last address known.
      if (net.isIP(hop) === 0) break
      address = hop
    }
  }
  resolved.set(req, address)
  return address
}

/** The request's client address (its socket's peer unless resolved through a trusted proxy). */
export function clientAddress(req: Peer): string {
  return resolved.get(req) ?? plain(req.socket.remoteAddress ?? 'unknown')
}
