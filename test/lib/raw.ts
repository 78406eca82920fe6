// Raw HTTP over a socket, for what fetch cannot send or hides: malformed headers,
// partial bodies, compressed bytes, connection closes.
import net from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  /** The body as received (de-chunked when the answer was chunked, never decompressed). */
  body: Buffer
  /**
   * The server closed the connection (or reset it) within keepOpenMs. False when the
   * connection was still open when this side gave up and closed it.
   */
  closed: boolean
  text: string
}

export interface RawOptions {
  /** How long to wait for the server to close the connection before closing it here. Default 5000. */
  keepOpenMs?: number
  /** Further pieces written after the request, gapMs apart, until the server answers. */
  chunks?: (Buffer | string)[]
  gapMs?: number
  /**
   * Written as soon as the answer begins, this side reading nothing more for 200 ms:
   * a client still sending the body the server answered without reading.
   */
  afterAnswer?: Buffer
}

export function rawExchange(url: string, request: string | Buffer, options: RawOptions = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) })
    const received: Buffer[] = []
    // Only the server's close counts, not the one of the timer below.
    let serverClosed = false
    const timer = setTimeout(() => socket.destroy(), options.keepOpenMs ?? 5000)
    let lateSent = false
    socket.on('data', (data) => {
      received.push(data)
      if (!options.afterAnswer || lateSent) return
      lateSent = true
      socket.pause()
      socket.write(options.afterAnswer, () => setTimeout(() => socket.resume(), 200))
    })
    socket.on('end', () => {
      serverClosed = true
    })
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') serverClosed = true
    })
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(parse(Buffer.concat(received), serverClosed))
    })
    socket.on('connect', async () => {
      socket.write(request)
      for (const chunk of options.chunks ?? []) {
        await new Promise((r) => setTimeout(r, options.gapMs ?? 10))
        // Once the server has answered, writing more would only provoke a reset that
        // can discard the answer before it is read.
        if (socket.destroyed || socket.writableEnded || received.length > 0) break
        socket.write(chunk)
      }
    })
  })
}

function parse(data: Buffer, closed: boolean): RawResponse {
  const end = data.indexOf('\r\n\r\n')
  const head = (end === -1 ? data : data.subarray(0, end)).toString('latin1')
  const [statusLine, ...lines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const at = line.indexOf(':')
    if (at > 0) headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim()
  }
  let body = end === -1 ? Buffer.alloc(0) : data.subarray(end + 4)
  if (/\bchunked\b/i.test(headers['transfer-encoding'] ?? '')) body = dechunk(body)
  return { status: Number(statusLine?.split(' ')[1] ?? 0), headers, body, closed, text: body.toString('utf8') }
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = []
  let at = 0
  while (at < data.length) {
    const lineEnd = data.indexOf('\r\n', at)
    if (lineEnd === -1) break
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1').split(';')[0]!, 16)
    if (!Number.isFinite(size) || size === 0) break
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size))
    at = lineEnd + 2 + size + 2
  }
  return Buffer.concat(parts)
}
