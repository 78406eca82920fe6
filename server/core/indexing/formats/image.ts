// Images (jpg, jpeg, png, gif, webp): OCR with the tesseract command, the image given
// on stdin. The header is checked first (that the bytes are the named type, and the
// pixel count, so a decompression bomb never reaches tesseract).
import { execFile } from 'node:child_process'
import { Unreadable, type Read } from './common.ts'

export const OCR_TIME_LIMIT_MS = 60_000
const MAX_PIXELS = 50_000_000
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024

type Kind = 'jpeg' | 'png' | 'gif' | 'webp'

const KINDS: Record<string, Kind> = { jpg: 'jpeg', jpeg: 'jpeg', png: 'png', gif: 'gif', webp: 'webp' }

export async function readImage(bytes: Uint8Array, extension: string, options: { signal?: AbortSignal; ocr?: 'auto' | 'off' }): Promise<Read> {
  const kind = KINDS[extension]!
  const size = dimensions(bytes, kind)
  if (!size) throw new Unreadable(`the file is not a ${kind.toUpperCase()} image`)
  if (size.width * size.height > MAX_PIXELS) throw new Unreadable(`the image is too large to OCR (${size.width}×${size.height} pixels)`)
  if (options.ocr === 'off') return { sections: [], note: 'images are not OCRed: OCR is turned off' }
  const outcome = await tesseract(bytes, options.signal)
  if (outcome === 'missing') return { sections: [], note: 'images are not OCRed: tesseract is not installed' }
  const text = outcome.replace(/\f/g, '\n').replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim()
  return text ? { sections: [{ text }] } : { sections: [], note: 'no text was found in the image' }
}

function tesseract(bytes: Uint8Array, signal: AbortSignal | undefined): Promise<string | 'missing'> {
  return new Promise((resolve, reject) => {
    const child = execFile('tesseract', ['stdin', 'stdout'], {
      encoding: 'utf8', timeout: OCR_TIME_LIMIT_MS, maxBuffer: MAX_OUTPUT_BYTES, signal, windowsHide: true,
      // One thread per OCR: the worker runs several jobs at once.
      env: { ...process.env, OMP_THREAD_LIMIT: '1' },
    }, (error, stdout) => {
      if (!error) return resolve(stdout)
      const failure = error as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null }
      if (failure.code === 'ENOENT') return resolve('missing')
      if (failure.name === 'AbortError' || signal?.aborted) return reject(signal?.reason ?? error)
      if (failure.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') return reject(new Unreadable('the image holds more text than is indexed'))
      if (failure.killed || failure.signal) return reject(new Unreadable(`OCR took longer than ${OCR_TIME_LIMIT_MS / 1000} seconds`))
      reject(new Unreadable('the image could not be read for OCR'))
    })
    // A child that exits before reading all of stdin closes the pipe; its exit code says why.
    child.stdin?.on('error', () => {})
    child.stdin?.end(bytes)
  })
}

/** Width and height from the header, or null when the bytes are not that kind of image. */
export function dimensions(bytes: Uint8Array, kind: Kind): { width: number; height: number } | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const ascii = (from: number, length: number) => String.fromCharCode(...bytes.subarray(from, from + length))
  switch (kind) {
    case 'png':
      if (bytes.length < 24 || ascii(1, 3) !== 'PNG' || ascii(12, 4) !== 'IHDR') return null
      return { width: view.getUint32(16), height: view.getUint32(20) }
    case 'gif':
      if (bytes.length < 10 || !/^GIF8[79]a$/.test(ascii(0, 6))) return null
      return { width: view.getUint16(6, true), height: view.getUint16(8, true) }
    case 'webp': {
      if (bytes.length < 30 || ascii(0, 4) !== 'RIFF' || ascii(8, 4) !== 'WEBP') return null
      const chunk = ascii(12, 4)
      if (chunk === 'VP8 ') return { width: view.getUint16(26, true) & 0x3fff, height: view.getUint16(28, true) & 0x3fff }
      if (chunk === 'VP8L') {
        const bits = view.getUint32(21, true)
        return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
      }
      if (chunk === 'VP8X') {
        const width = 1 + (bytes[24]! | (bytes[25]! << 8) | (bytes[26]! << 16))
        const height = 1 + (bytes[27]! | (bytes[28]! << 8) | (bytes[29]! << 16))
        return { width, height }
      }
      return null
    }
    case 'jpeg': {
      if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return null
      // Walk the segments to the first start-of-frame marker, which holds the size.
      let at = 2
      while (at + 9 < bytes.length) {
        if (bytes[at] !== 0xff) return null
        const marker = bytes[at + 1]!
        if (marker === 0xff) { at++; continue }
        const length = view.getUint16(at + 2)
        if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
          return { width: view.getUint16(at + 7), height: view.getUint16(at + 5) }
        }
        at += 2 + length
      }
      return null
    }
  }
}
