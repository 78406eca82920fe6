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

const fake = await fakeProvider(t)
const embedder = { org: 'acme', id: 'embed-model', providerSlug: 'fake', contextWindow: 8000, maxOutputTokens: null,
  default: false, capabilities: ['embeddings' as const] }
const { service, alpha, olive } = await world(t, {
  worker: true, store: true,
  seed: {
    providers: [{ org: 'acme', slug: 'fake', kind: 'openai-compatible', baseUrl: fake.url, apiKey: 'sk-fake' }],
    models: [embedder],
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
