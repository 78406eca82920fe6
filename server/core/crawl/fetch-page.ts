// One page over HTTP(S) for the crawler, with every connection behind the address
// guard. Redirects are followed here, not by the client, so each hop is judged (the
// guard, the scheme, the caller's own rule such as staying on a site) before it is
// requested. The body is bounded while it streams, and every network condition is an
// answer, never a throw, so a crawl of a thousand pages survives any one of them.
import http from 'node:http'
import https from 'node:https'
import type net from 'node:net'
import { checkHost, guardedLookup, isNotPublicError } from '../web/guard.ts'

export type FetchPageOptions = {
  allow?: net.BlockList
  maxBytes: number
  maxRedirects: number
  /** The whole fetch, redirects and a trickling body included. */
  timeoutMs: number
  etag?: string | null
  lastModified?: string | null
  userAgent: string
  signal?: AbortSignal
  accept?: string
  /** Asked before a redirect is followed; a reason refuses the redirect with it. */
  followRedirect?: (target: URL) => RedirectRefusal | null
}

export type RedirectRefusal = 'off_site' | 'disallowed'

export type RefusalReason = 'internal_address' | 'too_large' | 'redirect_loop' | 'too_many_redirects' | 'bad_scheme' | 'timeout' | 'network' | RedirectRefusal

export type FetchedPage = {
  kind: 'fetched'
  url: string
  status: number
  contentType: string
  charset: string | null
  body: Buffer
  etag: string | null
  lastModified: string | null
}

export type PageAnswer =
  | FetchedPage
  | { kind: 'not-modified'; url: string; etag: string | null; lastModified: string | null }
  | { kind: 'refused'; url: string; reason: RefusalReason; detail: string }

const DEFAULT_ACCEPT = 'text/html, application/xhtml+xml;q=0.9, */*;q=0.5'
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])

// Keep-alive pools are keyed by host and port only, not by the lookup a socket was
// made with, so a socket one allowlist admitted must never serve a fetch under
// another: each allowlist (and "none") gets pools of its own.
const withoutAllowlist = newAgents()
const agentsByAllowlist = new WeakMap<net.BlockList, { http: http.Agent; https: https.Agent }>()

function newAgents() {
  return { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }
}

function agentsFor(allow: net.BlockList | undefined) {
  if (!allow) return withoutAllowlist
  let agents = agentsByAllowlist.get(allow)
  if (!agents) agentsByAllowlist.set(allow, (agents = newAgents()))
  return agents
}

export async function fetchPage(address: string, options: FetchPageOptions): Promise<PageAnswer> {
  const deadline = AbortSignal.timeout(options.timeoutMs)
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline
  const lookup = guardedLookup(options.allow)
  const agents = agentsFor(options.allow)
  const refused = (url: URL | string, reason: RefusalReason, detail: string): PageAnswer =>
    ({ kind: 'refused', url: String(url), reason, detail })

  let url: URL
  try {
    url = withoutFragment(new URL(address))
  } catch {
    return refused(address, 'bad_scheme', `${address} is not an absolute URL`)
  }
  const visited = new Set<string>()
  for (let redirects = 0; ; redirects++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return refused(url, 'bad_scheme', `only http and https are fetched, not ${url.protocol}`)
    visited.add(url.href)
    const notPublic = checkHost(url.hostname, options.allow)
    if (notPublic) return refused(url, 'internal_address', notPublic)

    let response: http.IncomingMessage
    try {
      response = await request(url, options, lookup, url.protocol === 'https:' ? agents.https : agents.http, signal)
    } catch (error) {
      return failure(url, error, deadline, options.timeoutMs)
    }
    const status = response.statusCode ?? 0
    const location = response.headers.location
    if (REDIRECT_STATUSES.has(status) && location) {
      response.resume()
      let target: URL
      try {
        target = withoutFragment(new URL(location, url))
      } catch {
        return refused(url, 'network', `the redirect to ${JSON.stringify(location)} is not a URL`)
      }
      if (visited.has(target.href)) return refused(target, 'redirect_loop', `the redirects lead back to ${target.href}`)
      if (redirects >= options.maxRedirects) return refused(target, 'too_many_redirects', `more than ${options.maxRedirects} redirects`)
      const refusal = target.protocol === 'http:' || target.protocol === 'https:' ? options.followRedirect?.(target) : null
      if (refusal) return refused(target, refusal, `${url.href} redirects to ${target.href}`)
      url = target
      continue
    }
    const etag = header(response, 'etag')
    const lastModified = header(response, 'last-modified')
    if (status === 304) {
      response.resume()
      return { kind: 'not-modified', url: url.href, etag: etag ?? options.etag ?? null, lastModified: lastModified ?? options.lastModified ?? null }
    }
    const declared = Number(response.headers['content-length'])
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      response.destroy()
      return refused(url, 'too_large', `the page declares ${declared} bytes, over the ${options.maxBytes} byte limit`)
    }
    let body: Buffer | null
    try {
      body = await readBounded(response, options.maxBytes)
    } catch (error) {
      return failure(url, error, deadline, options.timeoutMs)
    }
    if (!body) return refused(url, 'too_large', `the page is over the ${options.maxBytes} byte limit`)
    const { mediaType, charset } = parseContentType(header(response, 'content-type'))
    return { kind: 'fetched', url: url.href, status, contentType: mediaType, charset, body, etag, lastModified }
  }
}

function request(url: URL, options: FetchPageOptions, lookup: net.LookupFunction, agent: http.Agent, signal: AbortSignal): Promise<http.IncomingMessage> {
  const client = url.protocol === 'https:' ? https : http
  const headers: Record<string, string> = { 'user-agent': options.userAgent, accept: options.accept ?? DEFAULT_ACCEPT }
  if (options.etag) headers['if-none-match'] = options.etag
  if (options.lastModified) headers['if-modified-since'] = options.lastModified
  return new Promise((resolve, reject) => {
    const req = client.request(url, { method: 'GET', headers, lookup, agent, signal }, resolve)
    req.on('error', reject)
    req.end()
  })
}

/** The body, or null once it passes maxBytes (the rest is never read). */
async function readBounded(response: http.IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > maxBytes) {
      response.destroy()
      return null
    }
    chunks.push(chunk)
  }
  // A connection that closes early ends the iteration without an error.
  if (!response.complete) throw new Error('the connection closed before the page was complete')
  return Buffer.concat(chunks, size)
}

function failure(url: URL, error: unknown, deadline: AbortSignal, timeoutMs: number): PageAnswer {
  if (isNotPublicError(error)) return { kind: 'refused', url: url.href, reason: 'internal_address', detail: (error as Error).message }
  if (deadline.aborted) return { kind: 'refused', url: url.href, reason: 'timeout', detail: `no complete answer in ${timeoutMs} ms` }
  return { kind: 'refused', url: url.href, reason: 'network', detail: `fetching ${url.href} failed: ${(error as Error).message}` }
}

function header(response: http.IncomingMessage, name: string): string | null {
  const value = response.headers[name]
  return (Array.isArray(value) ? value[0] : value) ?? null
}

function withoutFragment(url: URL): URL {
  url.hash = ''
  return url
}

export function parseContentType(value: string | null): { mediaType: string; charset: string | null } {
  if (!value) return { mediaType: '', charset: null }
  const [type = '', ...params] = value.split(';')
  let charset: string | null = null
  for (const param of params) {
    const match = /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(param)
    if (match) charset = match[1]!.toLowerCase()
  }
  return { mediaType: type.trim().toLowerCase(), charset }
}

/** The body as text in its charset; a charset TextDecoder does not know reads as UTF-8. */
export function decodeBody(body: Buffer, charset: string | null): string {
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body)
  } catch {
    return new TextDecoder('utf-8').decode(body)
  }
}
