// Vectors in the index (SPEC.md item 7; docs/knowledge.md): an organization whose
// catalog lists an embeddings model gets a vector per chunk from its provider, and
// search fuses cosine similarity with full text and trigrams. A provider that fails
// leaves the file indexed for full text and trigrams.
import t from 'tap'
import { world } from '../lib/world.ts'
import { eventually } from '../lib/wait.ts'
import { fakeProvider } from '../lib/fake-provider.ts'
import { uploadFile } from '../lib/files.ts'
import { embed } from '../../server/core/indexing/embeddings.ts'
import { queryEmbedder } from '../../server/core/indexing/query-embedder.ts'

const fake = await fakeProvider(t)
const embedder = { org: 'acme', id: 'embed-model', providerSlug: 'fake', contextWindow: 8000, maxOutputTokens: null,
  default: false, capabilities: ['embeddings' as const] }
const { service, alpha, olive } = await world(t, {
  worker: true, store: true,
  seed: {
    providers: [{ org: 'acme', slug: 'fake', kind: 'openai-compatible', baseUrl: fake.url, apiKey: 'sk-fake' }],
    models: [embedder, { org: 'acme', id: 'tool-model', providerSlug: 'fake', contextWindow: 8000, maxOutputTokens: null, default: false }],
  },
})
const sql = service.db.owner
const [{ id: acme }] = await sql`select id from app.organizations where slug = 'acme'` as unknown as [{ id: string }]

async function indexed(name: string, text: string): Promise<string> {
  const file = (await uploadFile(olive, alpha, name, text, { skipRagIndexing: false })).body.file
  await eventually(() => sql`select indexing_status from app.documents where id = ${file.id}`,
    (rows) => rows[0]?.indexing_status !== 'indexing')
  // The job ends after its vectors are written (or given up): wait for it too.
  await eventually(() => sql`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'index_file'`,
    (rows) => rows[0]!.n === 0)
  return file.id as string
}

t.test('each chunk of an organization with an embeddings model carries its vector', async (t) => {
  const id = await indexed('boats.txt', 'sailing boats harbour anchor')
  // Vectors land just after the passages are stored.
  const [chunk] = await eventually(() => sql`select embedding from app.index_chunks where document_id = ${id}`,
    (rows) => rows[0]?.embedding != null)
  t.equal(chunk!.embedding.length, 64, 'the provider\'s vector is kept')
  const [expected] = await embed({ id: 'embed-model', providerSlug: 'fake', baseUrl: fake.url, apiKey: 'sk-fake' }, ['sailing boats harbour anchor'])
  t.same(chunk!.embedding, expected, 'the vector of the chunk\'s text')
  t.equal(fake.requests.at(-1).model, 'embed-model')
})

t.test('the vector signal ranks a passage no word of the query matches', async (t) => {
  const near = await indexed('near.txt', 'zebra quokka')
  const far = await indexed('far.txt', 'totally different words here')
  const [vector] = await embed({ id: 'embed-model', providerSlug: 'fake', baseUrl: fake.url, apiKey: 'sk-fake' }, ['quokka zebra'])
  const files = [`document:${near}`, `document:${far}`]
  const ranked = await sql`select document_id::text as id, score from app.search_chunks('unmatched', ${files}::text[], 5, 0,
                                                                         ${vector!}::real[], 'english', ${acme})`
  t.equal(ranked[0]!.id, near, 'the passage nearest by vector comes first')
  const without = await sql`select 1 from app.search_chunks('unmatched', ${files}::text[], 5, 0, null, 'english', ${acme})`
  t.equal(without.length, 0, 'without a query vector nothing matches')
  t.ok(ranked[0]!.score <= 0.5 + 1e-9, 'found by one of the two signals in use (full text, vectors): half the fused maximum at most')
})

t.test('a provider that fails leaves the file indexed without vectors', async (t) => {
  await sql`update app.models set id = 'fail-embed' where id = 'embed-model'`
  t.teardown(() => sql`update app.models set id = 'embed-model' where id = 'fail-embed'`)
  const id = await indexed('plain.txt', 'still searchable by words')
  const [row] = await sql`select d.indexing_status, c.embedding from app.documents d join app.index_chunks c on c.document_id = d.id
                           where d.id = ${id}`
  t.same(row, { indexing_status: 'indexed', embedding: null })
  const found = await sql`select 1 from app.search_chunks('searchable words', ${[`document:${id}`]}::text[], 5, 0, null, 'english', ${acme})`
  const elsewhere = await sql`select 1 from app.search_chunks('searchable words', null, 5, 0, null, 'english', gen_random_uuid())`
  t.equal(elsewhere.length, 0, 'another organization\'s search never finds it')
  t.equal(found.length, 1, 'full text still finds it')
})

// The fake provider's vectors count words by a hash into 64 buckets. A word of letters
// none of `word`'s, in the same bucket: full text and similar words never match it,
// only its vector does.
function sameBucketAs(word: string): string {
  const bucket = (w: string) => { let hash = 0; for (const c of w) hash = (hash * 31 + c.charCodeAt(0)) >>> 0; return hash % 64 }
  const letters = [...'ghijlmnpstvwxy'].filter((c) => !word.includes(c))
  for (let n = 0; ; n++) {
    let candidate = ''
    for (let rest = n + letters.length ** 3; rest > 0; rest = Math.floor(rest / letters.length)) candidate += letters[rest % letters.length]
    if (bucket(candidate) === bucket(word)) return candidate
  }
}

t.test('the knowledge search embeds the query with the organization\'s model', async (t) => {
  const near = (await olive.post('/api/v1/knowledge-entries', { title: 'Animals', content: 'okapi' })).body.id
  const far = (await olive.post('/api/v1/knowledge-entries', { title: 'Other', content: 'carburettor' })).body.id
  for (const id of [near, far]) {
    await eventually(() => sql`select count(*)::int as n from app.index_chunks c join app.index_files f using (file_id)
                                where f.knowledge_entry_id = ${id} and c.embedding is not null`, (rows) => rows[0]!.n > 0)
  }
  const word = sameBucketAs('okapi')
  const res = await olive.post('/api/v1/knowledge/search', { query: word })
  t.equal(res.status, 200)
  t.equal(res.body.results[0]?.source.id, near, `"${word}" finds the entry whose vector is nearest`)
  const lexical = await sql`select 1 from app.search_chunks(${word}, null, 5, 0, null, 'english', ${acme})`
  t.equal(lexical.length, 0, 'no word of it matches: the vector alone found it')
})

t.test('the assistant\'s files_search embeds the query in the worker', async (t) => {
  const file = (await uploadFile(olive, alpha, 'beasts.txt', 'pangolin', { skipRagIndexing: false })).body.file
  await eventually(() => sql`select count(*)::int as n from app.index_chunks where document_id = ${file.id} and embedding is not null`,
    (rows) => rows[0]!.n > 0)
  const thread = `/api/v1/projects/${alpha}/threads/${(await olive.post(`/api/v1/projects/${alpha}/threads`, {})).body.id}`
  const word = sameBucketAs('pangolin')
  // The model's own queryEmbedding is replaced by the worker's.
  const calls = [{ name: 'files_search', arguments: { query: word, queryEmbedding: [1, 2, 3] } }]
  const sent = await olive.post(`${thread}/messages`, { content: JSON.stringify({ calls }), model: 'tool-model' })
  t.equal(sent.status, 202)
  await eventually(() => olive.get(`${thread}/generation`), (g) => g.body.status === 'idle')
  const text: string = (await olive.get(`${thread}/messages/${sent.body.replyMessageId}`)).body.parts[0].text
  const said = JSON.parse(text.slice('tool said: '.length))
  t.equal(said.results[0]?.fileId, file.id, `"${word}" finds the file by its vector`)
  t.ok(fake.requests.some((r) => r.model === 'embed-model' && JSON.stringify(r.input) === JSON.stringify([word])),
    'the worker asked the embeddings model for the query\'s vector')
})

t.test('a query embedder keeps recent vectors and falls back to none when the provider fails', async (t) => {
  let lookups = 0
  const model = (id: string) => ({ id, providerSlug: 'fake', baseUrl: fake.url, apiKey: 'sk-fake' })
  let current = model('embed-model')
  const warned: string[] = []
  const embedder = queryEmbedder(async () => { lookups++; return [{ model: current }] as never },
    { modelTtlMs: 0, warn: (message) => warned.push(message) })
  const before = fake.requests.length
  const first = await embedder(acme, 'harbour')
  t.same(await embedder(acme, 'harbour'), first, 'the same vector again')
  t.equal(fake.requests.length - before, 1, 'the provider is asked once for a repeated query')
  t.equal(lookups, 2, 'the model is read again once its time is up')
  current = model('fail-embed')
  t.equal(await embedder(acme, 'harbour'), null, 'a failing provider: no vector, no error')
  t.same(warned, ['query embedding failed; searched without vectors'])
  const none = queryEmbedder(async () => [{ model: null }] as never)
  t.equal(await none(acme, 'harbour'), null, 'no embeddings model: no vector')
})
