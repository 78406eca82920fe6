// The indexing service as `npm run indexing` runs it (its own process, its own job
// runner), measured two ways:
//
// - documents indexed per minute: a mix of plain text, markdown and generated PDFs
//   uploaded in the background (multipart, as clients do), from the first upload to
//   the last one settled, polled through POST /api/v1/documents/statuses;
// - search: POST /api/v1/search over 100,000 chunks at 8 connections, beside a floor
//   that sends the route's own statement (server/services/indexing/search.ts) with the
//   same arguments from 8 callers through the service's own pool settings, with no HTTP;
//   after a warm-up of each (BENCH_DURATION, as each round), the two sides take turns over BENCH_SEARCH_ROUNDS rounds (5),
//   both measured from a process of their own (bench/search-load.ts).
//
// The corpus is made of pseudo-words with Zipf's frequency, like the content words of
// prose (the commonest ranks, a language's stopwords, left out): a few words in many
// chunks, most words in few. Queries mix two-word searches of common
// and rare words and a misspelt one; every query names every file, as a client
// searching its whole collection does.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import postgres from 'postgres'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import { medianFigures, type Figures } from './measure.ts'
import type { SearchLoadSettings } from './search-load.ts'

const SEARCH_CONNECTIONS = 8
const SEARCH_ROUNDS = Math.max(1, Math.floor(Number(process.env.BENCH_SEARCH_ROUNDS ?? 5)) || 5)
const CHUNKS = Number(process.env.BENCH_KNOWLEDGE_CHUNKS ?? 100_000)
const CHUNKS_PER_FILE = 100
const DOCUMENTS = Number(process.env.BENCH_KNOWLEDGE_DOCUMENTS ?? 120)
const VOCABULARY = 20_000
const WORDS_PER_CHUNK = 160

export interface KnowledgeFigures {
  indexing: { documents: number; completed: number; failed: number; seconds: number; perMinute: number; concurrency: number }
  search: { chunks: number; files: number; http: Figures; floor: Figures; rounds: { http: Figures; floor: Figures }[] }
}

// Deterministic pseudo-random numbers: the same corpus on every run.
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0
    return state / 2 ** 32
  }
}

const syllables = ['ka', 'lo', 'mi', 'ren', 'tu', 'sa', 'vel', 'or', 'an', 'qui', 'des', 'pra', 'lun', 'ith', 'bor', 'ce']
function word(index: number): string {
  let text = ''
  let n = index + 17
  do {
    text += syllables[n % syllables.length]
    n = Math.floor(n / syllables.length)
  } while (n > 0)
  return text
}

/** Ranks below this are the language's stopwords, which full text drops: not drawn. */
const STOPWORD_RANKS = 100

/**
 * A content word drawn with Zipf's skew (probability ∝ 1/rank) over ranks
 * STOPWORD_RANKS..VOCABULARY: rank 100 is in about a quarter of the chunks, rank 1,000
 * in a few percent, most words in a handful, as content words are in prose.
 */
const drawWord = (next: () => number) =>
  word(Math.floor(STOPWORD_RANKS * (VOCABULARY / STOPWORD_RANKS) ** next()) - 1)

function sentence(next: () => number, words: number): string {
  return Array.from({ length: words }, () => drawWord(next)).join(' ')
}

/**
 * The corpus, written straight into the index store: files of 100 chunks each. The
 * full-text index is built once the corpus is in, as a bulk load does (a rum index
 * costs about 3 ms a passage to maintain row by row): this measures search, and
 * indexing is measured above.
 */
async function seedChunks(sql: postgres.Sql): Promise<string[]> {
  const textIndexes = await sql<{ name: string; definition: string }[]>`
    select indexname as name, indexdef as definition from pg_indexes
     where schemaname = 'app' and tablename = 'index_chunks' and indexname like 'index_chunks_search%'`
  for (const index of textIndexes) await sql.unsafe(`drop index app.${index.name}`)
  const files = Math.ceil(CHUNKS / CHUNKS_PER_FILE)
  const ids: string[] = []
  const next = random(7)
  for (let f = 0; f < files; f++) {
    const id = `bench-${f}`
    ids.push(id)
    const chunks = Array.from({ length: CHUNKS_PER_FILE }, (_, ordinal) =>
      ({ ordinal, content: sentence(next, WORDS_PER_CHUNK), page: Math.floor(ordinal / 4) + 1, heading: null }))
    await sql.begin(async (tx) => {
      await tx`select app.index_accept(${id}, ${id + '.txt'}, ${Buffer.from('')}, '{}', 'english', false)`
      await tx`select 1 from app.index_claim(${id}, (select revision from app.index_files where file_id = ${id}))`
      // The extracted text feeds the owner's vocabulary, which misspelt queries are matched against.
      await tx`select app.index_complete(${id}, (select revision from app.index_files where file_id = ${id}),
                                         ${chunks.map((chunk) => chunk.content).join('\n')},
                                         ${JSON.stringify(chunks)}::text::jsonb, null)`
    })
  }
  await sql`set maintenance_work_mem = '512MB'`
  for (const index of textIndexes) await sql.unsafe(index.definition)
  // Settled as a corpus long in use is: visibility maps set and dirty pages written,
  // so the measure does not pay for the load's hint bits and checkpoint.
  await sql`vacuum analyze app.index_chunks`
  await sql`vacuum analyze app.index_files`
  await sql`vacuum analyze app.index_words`
  await sql`checkpoint`
  return ids
}

async function pdf(text: string): Promise<Uint8Array> {
  const document = await PDFDocument.create()
  const font = await document.embedFont(StandardFonts.Helvetica)
  const words = text.split(' ')
  for (let page = 0; page < 3; page++) {
    const sheet = document.addPage([595, 842])
    for (let line = 0; line < 40; line++) {
      const at = (page * 40 + line) * 10
      sheet.drawText(words.slice(at % words.length, at % words.length + 10).join(' '), { x: 40, y: 800 - line * 19, size: 11, font })
    }
  }
  return document.save()
}

async function upload(base: string, fileId: string, name: string, bytes: Uint8Array, type: string): Promise<void> {
  const form = new FormData()
  form.set('file_id', fileId)
  form.set('file', new Blob([bytes], { type }), name)
  const res = await fetch(`${base}/api/v1/documents/upload`, { method: 'POST', body: form })
  if (res.status !== 202) throw new Error(`upload ${name}: ${res.status} ${await res.text()}`)
}

async function benchIndexing(base: string, concurrency: number): Promise<KnowledgeFigures['indexing']> {
  const next = random(11)
  const documents: { id: string; name: string; bytes: Uint8Array; type: string }[] = []
  for (let i = 0; i < DOCUMENTS; i++) {
    const text = Array.from({ length: 40 }, () => sentence(next, 20) + '.').join(' ')
    const kind = i % 3
    if (kind === 0) documents.push({ id: `doc-${i}`, name: `doc-${i}.txt`, bytes: Buffer.from(text), type: 'text/plain' })
    else if (kind === 1) {
      const markdown = `# ${sentence(next, 3)}\n\n${text}\n\n## ${sentence(next, 2)}\n\n${text}`
      documents.push({ id: `doc-${i}`, name: `doc-${i}.md`, bytes: Buffer.from(markdown), type: 'text/markdown' })
    } else documents.push({ id: `doc-${i}`, name: `doc-${i}.pdf`, bytes: await pdf(text), type: 'application/pdf' })
  }
  const began = performance.now()
  for (const document of documents) await upload(base, document.id, document.name, document.bytes, document.type)
  const ids = documents.map((d) => d.id)
  let statuses: { status: string }[] = []
  for (;;) {
    const res = await fetch(`${base}/api/v1/documents/statuses`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ file_ids: ids }),
    })
    statuses = ((await res.json()) as { statuses: { status: string }[] }).statuses
    if (statuses.every((s) => s.status === 'completed' || s.status === 'failed')) break
    await new Promise((r) => setTimeout(r, 50))
  }
  const seconds = (performance.now() - began) / 1000
  const completed = statuses.filter((s) => s.status === 'completed').length
  return { documents: DOCUMENTS, completed, failed: DOCUMENTS - completed, seconds: Math.round(seconds * 10) / 10,
           perMinute: Math.round(DOCUMENTS / seconds * 60), concurrency }
}

function queries(): string[] {
  const next = random(23)
  const out: string[] = []
  for (let i = 0; i < 200; i++) {
    // Common words of prose (ranks 100-300) and rarer ones (1,000-6,000).
    const common = word(STOPWORD_RANKS + Math.floor(next() * 200))
    const rare = word(1000 + Math.floor(next() * 5000))
    const form = i % 4
    if (form === 0) out.push(`${common} ${rare}`)
    else if (form === 1) out.push(rare)
    else if (form === 2) out.push(`${rare} ${word(1000 + Math.floor(next() * 5000))}`)
    else out.push(rare.slice(0, -1) + 'x')
  }
  return out
}

export async function benchKnowledge(url: string, port: number, seconds: number): Promise<KnowledgeFigures> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const concurrency = Number(process.env.INDEXING_CONCURRENCY ?? 2)
  const child = spawnIndexing(url, port, concurrency)
  const base = `http://127.0.0.1:${port}`
  try {
    await waitUp(base)
    const indexing = await benchIndexing(base, concurrency)
    const files = await seedChunks(sql)
    const rounds = await searchRounds({
      base, url, connections: SEARCH_CONNECTIONS, seconds, rounds: SEARCH_ROUNDS, queries: queries(), files,
    })
    const http = medianFigures(rounds.map((r) => r.http))
    const floor = medianFigures(rounds.map((r) => r.floor))
    return { indexing, search: { chunks: CHUNKS, files: files.length, http, floor, rounds } }
  } finally {
    child.kill('SIGTERM')
    await once(child, 'exit')
    await sql.end()
  }
}

/** The search rounds, measured by bench/search-load.ts in a process of its own. */
async function searchRounds(settings: SearchLoadSettings): Promise<{ http: Figures; floor: Figures }[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/search-load.ts'], { stdio: ['pipe', 'pipe', 'inherit'] })
  child.stdin!.end(JSON.stringify(settings))
  let out = ''
  child.stdout!.on('data', (chunk: Buffer) => { out += chunk.toString() })
  // 'close', not 'exit': the child's output may still be arriving when it exits.
  const [code] = await once(child, 'close') as [number | null]
  if (code !== 0) throw new Error(`the search load exited with ${code}`)
  return JSON.parse(out.trim().split('\n').pop()!) as { http: Figures; floor: Figures }[]
}

function spawnIndexing(url: string, port: number, concurrency: number): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', 'indexing'], {
    env: { ...process.env, DATABASE_URL: url, INDEXING_PORT: String(port), INDEXING_CONCURRENCY: String(concurrency),
           LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
}

async function waitUp(base: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) return
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error('the indexing service did not start')
}
