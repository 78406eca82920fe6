// The search measurement of bench/knowledge.ts, run as a process of its own, as a
// client is: the process that generated the 100,000-passage corpus spent 1.5 to 2
// times the CPU per request on the same client code, taken from the two cores the
// service and PostgreSQL share. Both sides run here, so both clients pay alike.
//
//   tsx bench/search-load.ts < settings.json   (sent by bench/knowledge.ts)
// prints the rounds as JSON on its last line.
import { readFileSync } from 'node:fs'
import { jsonPoster, loadConcurrently, type Figures } from './measure.ts'
import { loadConfig } from '../server/core/config.ts'
import { searchPassages } from '../server/services/indexing/search.ts'
import { indexingPool } from '../server/services/indexing/service.ts'

export interface SearchLoadSettings {
  /** The indexing service's base URL. */
  base: string
  /** The database, for the floor, which connects as the service does (indexingPool). */
  url: string
  connections: number
  seconds: number
  rounds: number
  queries: string[]
  files: string[]
}

const settings = JSON.parse(readFileSync(0, 'utf8')) as SearchLoadSettings
const { connections, seconds } = settings
const sql = indexingPool(loadConfig({ ...process.env, DATABASE_URL: settings.url }), settings.url)
// The bodies are made once: the client's CPU is taken from the same two cores.
const bodies = settings.queries.map((query) => Buffer.from(JSON.stringify({ query, file_ids: settings.files, top_k: 5 })))
let turn = 0
const client = jsonPoster(settings.base, connections)
const searchHttp = async () => (await client.post('/api/v1/search', bodies[turn++ % bodies.length]!)) === 200
// The floor sends the route's own statement with the route's arguments.
let floorTurn = 0
const searchFloor = async () => {
  await searchPassages(sql, { query: settings.queries[floorTurn++ % settings.queries.length]!, fileIds: settings.files,
    topK: 5, threshold: 0, embedding: null, language: 'english', includeMetadata: false })
  return true
}
try {
  // Warm-up: plans cached, code compiled on both sides, and the corpus (about 290 MB
  // of passages and rum index, more than PostgreSQL's default shared buffers) read
  // into the caches once over, as a corpus in use is.
  await loadConcurrently(connections, seconds, searchHttp)
  await loadConcurrently(connections, seconds, searchFloor)
  // The sides take turns and swap which goes first each round (HTTP, floor; floor,
  // HTTP; ...), so that neither gains from running later on a machine still warming
  // or quietening.
  const rounds: { http: Figures; floor: Figures }[] = []
  for (let round = 0; round < settings.rounds; round++) {
    if (round % 2 === 0) {
      const http = await loadConcurrently(connections, seconds, searchHttp)
      rounds.push({ http, floor: await loadConcurrently(connections, seconds, searchFloor) })
    } else {
      const floor = await loadConcurrently(connections, seconds, searchFloor)
      rounds.push({ http: await loadConcurrently(connections, seconds, searchHttp), floor })
    }
  }
  console.log(JSON.stringify(rounds))
} finally {
  client.close()
  await sql.end()
}
