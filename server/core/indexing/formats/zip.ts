// Reading the zip container of office files (docx, xlsx, pptx, odt) with the sizes its
// directory declares checked first, so a zip bomb is refused before it is inflated.
import { unzipSync } from 'fflate'
import { MAX_UNZIPPED_BYTES, Unreadable } from './common.ts'

/**
 * The entries `wanted` selects, inflated. `what` names the file in reasons ("the
 * presentation"). The whole archive's declared size is checked even when only some
 * entries are read, because the same check guards libraries that inflate everything.
 */
export function unzip(bytes: Uint8Array, what: string, wanted: (name: string) => boolean = () => false): Map<string, Uint8Array> {
  let declared = 0
  let files: Record<string, Uint8Array>
  try {
    files = unzipSync(bytes, {
      filter: (file) => {
        declared += file.originalSize
        if (declared > MAX_UNZIPPED_BYTES) throw new Unreadable(`${what} is too large once uncompressed`)
        if (!wanted(file.name)) return false
        if (file.compression !== 0 && file.compression !== 8) throw new Unreadable(`${what} uses an unsupported compression`)
        return true
      },
    })
  } catch (error) {
    if (error instanceof Unreadable) throw error
    throw new Unreadable(`${what} is damaged (its zip container cannot be read)`)
  }
  return new Map(Object.entries(files))
}

const utf8 = new TextDecoder('utf-8')

export function entryText(entries: Map<string, Uint8Array>, name: string): string | undefined {
  const bytes = entries.get(name)
  return bytes ? utf8.decode(bytes) : undefined
}
