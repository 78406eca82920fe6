// Chunking of extracted sections: the size bound, the overlap between neighbours, where
// cuts fall, metadata and ordinals, and that no cut separates a surrogate pair.
import t from 'tap'
import { CHUNK_CHARS, OVERLAP_CHARS, chunkSections } from '../../server/core/indexing/chunk.ts'

// Deterministic prose: numbered words make every position in the text identifiable.
function prose(sentences: number, paragraphEvery = 0): string {
  const out: string[] = []
  for (let i = 0; i < sentences; i++) {
    out.push(`Sentence ${i} tells of word${i}a word${i}b and word${i}c by the harbour.`)
    if (paragraphEvery && (i + 1) % paragraphEvery === 0) out.push('\n\n')
    else out.push(' ')
  }
  return out.join('').trim()
}

t.test('the defaults are the documented ones', async (t) => {
  t.equal(CHUNK_CHARS, 1200)
  t.equal(OVERLAP_CHARS, 200)
})

t.test('short sections are one chunk each; whitespace-only sections are dropped', async (t) => {
  const chunks = chunkSections([{ text: '  Hello harbour.  ' }, { text: ' \n\t ' }, { text: 'Second.', page: 2, heading: 'H' }])
  t.same(chunks, [
    { ordinal: 0, content: 'Hello harbour.', page: null, heading: null },
    { ordinal: 1, content: 'Second.', page: 2, heading: 'H' },
  ])
  t.same(chunkSections([]), [])
})

t.test('every chunk is within the size bound, and the text is covered in order', async (t) => {
  const text = prose(400)
  for (const [chunkChars, overlapChars] of [[1200, 200], [300, 50], [100, 0], [57, 20]] as const) {
    const chunks = chunkSections([{ text }], { chunkChars, overlapChars })
    t.ok(chunks.length > 1, `${chunkChars}: several chunks`)
    t.ok(chunks.every((chunk) => chunk.content.length <= chunkChars), `${chunkChars}: none longer than the bound`)
    t.ok(chunks.every((chunk) => chunk.content.length >= chunkChars / 2 - overlapChars || chunk === chunks.at(-1)), `${chunkChars}: none needlessly small`)
    // Every chunk is a verbatim piece of the text, each starting after the previous one starts.
    let from = 0
    let ordered = true
    for (const chunk of chunks) {
      const at = text.indexOf(chunk.content, from)
      if (at < 0) ordered = false
      from = at + 1
    }
    t.ok(ordered, `${chunkChars}: chunks are pieces of the text, in order`)
    t.ok(text.startsWith(chunks[0]!.content) && text.endsWith(chunks.at(-1)!.content), `${chunkChars}: the start and end are covered`)
    // Nothing falls between two chunks: each word of the text is in some chunk.
    const words = new Set(chunks.flatMap((chunk) => chunk.content.split(/\s+/)))
    t.ok(text.split(/\s+/).every((word) => words.has(word)), `${chunkChars}: every word is in a chunk`)
  }
})

t.test('consecutive chunks overlap by about overlapChars, starting at a word boundary', async (t) => {
  const text = prose(200)
  const chunks = chunkSections([{ text }], { chunkChars: 400, overlapChars: 100 })
  t.ok(chunks.length > 3)
  for (let i = 1; i < chunks.length; i++) {
    const previous = chunks[i - 1]!.content
    const current = chunks[i]!.content
    // The longest prefix of this chunk that ends the previous one is the overlap.
    let overlap = 0
    for (let length = Math.min(previous.length, current.length); length > 0; length--) {
      if (previous.endsWith(current.slice(0, length))) { overlap = length; break }
    }
    t.ok(overlap > 0 && overlap <= 100, `chunk ${i} overlaps the previous one (${overlap} characters)`)
    t.ok(overlap >= 100 - 30, `chunk ${i}: the overlap is about overlapChars`)
    const at = text.indexOf(current)
    t.ok(at > 0 && /\s/.test(text[at - 1]!), `chunk ${i} starts at a word boundary`)
  }
  const none = chunkSections([{ text }], { chunkChars: 400, overlapChars: 0 })
  t.equal(none.map((chunk) => chunk.content).join(' '), text, 'with no overlap the chunks rejoin to the text')
})

t.test('cuts prefer paragraphs, then sentences, then words', async (t) => {
  const paragraphs = prose(60, 3)
  const byParagraph = chunkSections([{ text: paragraphs }], { chunkChars: 500, overlapChars: 0 })
  t.ok(byParagraph.length > 3)
  for (const chunk of byParagraph.slice(0, -1)) {
    const at = paragraphs.indexOf(chunk.content)
    t.match(paragraphs.slice(at + chunk.content.length, at + chunk.content.length + 2), '\n\n', 'a chunk ends at a paragraph break')
  }
  const sentences = prose(60)
  const bySentence = chunkSections([{ text: sentences }], { chunkChars: 500, overlapChars: 0 })
  t.ok(bySentence.slice(0, -1).every((chunk) => chunk.content.endsWith('harbour.')), 'without paragraphs, chunks end at sentence ends')
  const words = Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ')
  const byWord = chunkSections([{ text: words }], { chunkChars: 100, overlapChars: 0 })
  t.ok(byWord.every((chunk) => chunk.content.split(' ').every((word) => /^w\d+$/.test(word))), 'without sentences, whole words')
  t.equal(byWord.map((chunk) => chunk.content).join(' '), words)
  const solid = 'x'.repeat(250)
  const hard = chunkSections([{ text: solid }], { chunkChars: 100, overlapChars: 10 })
  t.ok(hard.every((chunk) => chunk.content.length <= 100), 'text without spaces is cut at the bound')
  t.ok(hard.length >= 3)
})

t.test('chunks never span sections; page and heading are kept; ordinals run across the document', async (t) => {
  const chunks = chunkSections([
    { text: prose(30), page: 1, heading: 'Harbour' },
    { text: 'A short page.', page: 2 },
    { text: prose(30), heading: 'Marmalade' },
  ], { chunkChars: 300, overlapChars: 50 })
  t.same(chunks.map((chunk) => chunk.ordinal), chunks.map((_, index) => index))
  const first = chunks.filter((chunk) => chunk.page === 1)
  t.ok(first.length > 1 && first.every((chunk) => chunk.heading === 'Harbour'))
  t.same(chunks.filter((chunk) => chunk.page === 2), [{ ordinal: first.length, content: 'A short page.', page: 2, heading: null }])
  const last = chunks.filter((chunk) => chunk.heading === 'Marmalade')
  t.ok(last.length > 1 && last.every((chunk) => chunk.page === null))
  t.equal(first.length + 1 + last.length, chunks.length)
  t.notOk(chunks.some((chunk) => chunk.content.includes('A short page.') && chunk.content !== 'A short page.'), 'no chunk joins two sections')
})

t.test('no cut separates a surrogate pair', async (t) => {
  const emoji = '😀'.repeat(500)
  const mixed = Array.from({ length: 400 }, (_, i) => (i % 7 === 0 ? '𝒜𝒷 ' : 'a😀b')).join('')
  for (const text of [emoji, mixed, 'a' + emoji]) {
    for (const [chunkChars, overlapChars] of [[101, 30], [100, 33], [64, 0], [2, 0]] as const) {
      const chunks = chunkSections([{ text }], { chunkChars, overlapChars })
      t.ok(chunks.length > 1)
      const broken = chunks.filter((chunk) => chunk.content !== chunk.content.toWellFormed())
      t.same(broken, [], `${chunkChars}/${overlapChars}: every chunk is well formed`)
      t.ok(chunks.every((chunk) => chunk.content.length <= chunkChars), `${chunkChars}: within the bound`)
    }
  }
})

t.test('bad options are refused; an overlap too large for the chunk is reduced', async (t) => {
  t.throws(() => chunkSections([{ text: 'x' }], { chunkChars: 1 }), RangeError)
  t.throws(() => chunkSections([{ text: 'x' }], { chunkChars: 10.5 }), RangeError)
  const chunks = chunkSections([{ text: prose(50) }], { chunkChars: 100, overlapChars: 500 })
  t.ok(chunks.length > 1 && chunks.length < 200, 'it still makes progress')
})

// Its speed is the indexing benchmark's to measure (npm run bench), not a test's.
t.test('a long text is chunked whole, every chunk within the bound', async (t) => {
  const text = prose(60_000)
  const chunks = chunkSections([{ text }])
  t.ok(chunks.length > text.length / CHUNK_CHARS, `${chunks.length} chunks of ${text.length} characters`)
  t.ok(chunks.every((chunk) => chunk.content.length <= CHUNK_CHARS), 'none over the chunk size')
})
