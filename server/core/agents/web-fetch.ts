// An agent's web.fetch tool: one public page, read as text up to a byte cap. "Public"
// is decided where the connection is made: every address a name resolves to is
// checked as the socket connects (and again on each redirect), so a name that
// resolves to a loopback, private, link-local or otherwise internal address is
// refused, and one that changes its answer between a check and the connect is too.
import http from 'node:http'
import https from 'node:https'
import { checkHost, guardedLookup } from '../web/guard.ts'

export type FetchAnswer = { result: { url: string; status: number; contentType: string; text: string; truncated: boolean } } | { error: string }

const MAX_REDIRECTS = 5
const TIMEOUT_MS = 20_000
const TOTAL_TIMEOUT_MS = 30_000

// The connection's own lookup: the only addresses it may connect to are public ones.
const publicLookup = guardedLookup()

export async function fetchPublicPage(address: string, maxBytes: number, signal: AbortSignal): Promise<FetchAnswer> {
  // A page that trickles its bytes is bounded by a total time, not only an idle one.
  const bounded = AbortSignal.any([signal, AbortSignal.timeout(TOTAL_TIMEOUT_MS)])
  let url: URL
  try {
    url = new URL(address)
  } catch {
    return { error: 'the url is not an absolute address' }
  }
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return { error: 'only http and https addresses are fetched' }
    const refused = checkHost(url.hostname)
    if (refused) return { error: refused }
    let response: http.IncomingMessage
    try {
      response = await request(url, bounded)
    } catch (error) {
      return { error: `fetching ${url.origin}${url.pathname} failed: ${(error as Error).message}` }
    }
    const location = response.headers.location
    if (response.statusCode && response.statusCode >= 300 && response.statusCode < 400 && location) {
      response.resume()
      url = new URL(location, url)
      continue
    }
    let read: { text: string; truncated: boolean }
    try {
      read = await readText(response, maxBytes)
    } catch (error) {
      return { error: `reading ${url.origin}${url.pathname} failed: ${(error as Error).message}` }
    }
    const { text, truncated } = read
    return { result: { url: url.toString(), status: response.statusCode ?? 0, contentType: response.headers['content-type'] ?? '', text, truncated } }
  }
  return { error: `more than ${MAX_REDIRECTS} redirects` }
}

// Connection pools of web.fetch's own: Node's global agents keep sockets alive by host
// and port whatever lookup made them, so a socket another part of the process opened to
// an internal host must never carry an agent's fetch past the guard.
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }

function request(url: URL, signal: AbortSignal): Promise<http.IncomingMessage> {
  const client = url.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: 'GET', lookup: publicLookup, timeout: TIMEOUT_MS, signal,
      agent: url.protocol === 'https:' ? agents.https : agents.http,
      headers: { accept: 'text/html, text/plain, application/json;q=0.9, */*;q=0.5', 'user-agent': 'tale-agent/1' },
    }, resolve)
    req.on('timeout', () => req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)))
    req.on('error', reject)
    req.end()
  })
}

async function readText(response: http.IncomingMessage, maxBytes: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = []
  let size = 0
  let truncated = false
  for await (const chunk of response as AsyncIterable<Buffer>) {
    if (size + chunk.length > maxBytes) {
      chunks.push(chunk.subarray(0, maxBytes - size))
      truncated = true
      response.destroy()
      break
    }
    chunks.push(chunk)
    size += chunk.length
  }
  // A cut in the middle of a character drops the partial character.
  const text = new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks))
  return { text: truncated ? text.replace(/\uFFFD$/, '') : text, truncated }
}
