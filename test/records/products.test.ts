// Products (docs/records.md): create by natural key (a repeat updates), read, change,
// delete; the list by updatedAt then id, descending; who may write; other
// organizations.
import t from 'tap'
import { world, type World } from '../lib/world.ts'
import { refused, header } from '../lib/assert.ts'
import { pinClock, unpinClock } from '../lib/db.ts'
import { limit } from '../../server/core/limits.ts'

const BASE = '/api/v1/products'

type Product = { id: string; externalId: string | null; name: string; updatedAt: number; [k: string]: unknown }

async function listAll(w: World, limitRows = 2) {
  const seen: Product[] = []
  let cursor: string | null = null
  for (let i = 0; i < 100; i++) {
    const res = await w.max.get(`${BASE}?limit=${limitRows}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    if (res.status !== 200) throw new Error(`list failed: ${res.status} ${res.text}`)
    seen.push(...res.body.page)
    if (res.body.isDone) return seen
    cursor = res.body.continueCursor
  }
  throw new Error('the list never ended')
}

t.test('a product is created, repeated by its externalId (an update), read, changed and deleted', async (t) => {
  const w = await world(t)
  const created = await w.eddie.post(BASE, {
    externalId: 'p-1', name: ' Widget ', sku: 'W-1', price: 19.99, currency: 'EUR', attributes: { color: 'red' },
  })
  t.equal(created.status, 201)
  t.equal(created.body.created, true)
  const widget = created.body.product as Product
  t.equal(header(created, 'location'), `${BASE}/${widget.id}`)
  t.match(widget, { externalId: 'p-1', name: 'Widget', description: null, sku: 'W-1', price: 19.99, currency: 'EUR', attributes: { color: 'red' } })

  const repeat = await w.eddie.post(BASE, { externalId: 'p-1', description: 'A blue widget', attributes: { size: 'M' } })
  t.equal(repeat.status, 200, 'a repeat of the natural key updates')
  t.equal(repeat.body.created, false)
  t.equal(header(repeat, 'location'), null)
  t.equal(repeat.body.product.id, widget.id)
  t.match(repeat.body.product, { name: 'Widget', description: 'A blue widget', price: 19.99 }, 'omitted fields are kept')
  t.same(repeat.body.product.attributes, { color: 'red', size: 'M' }, 'attributes are merged key by key')
  const same = await w.eddie.post(BASE, { externalId: 'p-1', name: 'Widget' })
  t.equal(same.body.product.updatedAt, repeat.body.product.updatedAt, 'a repeat that changes nothing writes nothing')

  t.same((await w.max.get(`${BASE}/${widget.id}`)).body, { product: repeat.body.product }, 'a member reads')

  const patched = await w.eddie.patch(`${BASE}/${widget.id}`, { price: null, currency: null, sku: null, attributes: {} })
  t.equal(patched.status, 200)
  t.match(patched.body.product, { price: null, currency: null, sku: null, attributes: {} })
  const priced = await w.eddie.patch(`${BASE}/${widget.id}`, { price: 5, currency: 'USD' })
  t.match(priced.body.product, { price: 5, currency: 'USD' })
  t.match(refused(t, await w.eddie.patch(`${BASE}/${widget.id}`, { currency: null }), 400, 'INVALID_BODY').data.issues,
    [{ path: 'currency', message: /with a price/ }], 'a stored price keeps its currency')

  const other = (await w.eddie.post(BASE, { externalId: 'p-2', name: 'Gadget' })).body.product
  t.same(refused(t, await w.eddie.patch(`${BASE}/${other.id}`, { externalId: 'p-1' }), 409, 'PRODUCT_DUPLICATE_EXTERNAL_ID').data,
    { externalId: 'p-1', productId: widget.id })

  t.equal((await w.eddie.del(`${BASE}/${widget.id}`)).status, 204)
  refused(t, await w.eddie.get(`${BASE}/${widget.id}`), 404, 'PRODUCT_NOT_FOUND')
  t.equal((await w.eddie.post(BASE, { externalId: 'p-1', name: 'Widget again' })).status, 201, 'its natural key is free again')
})

t.test('the fields of a product are checked', async (t) => {
  const w = await world(t)
  const issues = async (body: unknown) => refused(t, await w.eddie.post(BASE, body), 400, 'INVALID_BODY').data.issues
  t.match(await issues({ sku: 'S-1' }), [{ path: 'name', message: /required/ }], 'a new product needs a name')
  t.match(await issues({ externalId: 'new', sku: 'S-1' }), [{ path: 'name' }], 'also when its key names no product yet')
  t.match(await issues({ name: 'X', price: 3 }), [{ path: 'currency', message: /with a price/ }])
  t.match(await issues({ name: 'X', price: -1, currency: 'EUR' }), [{ path: 'price' }])
  t.match(await issues({ name: 'X', price: limit('product.priceMax') + 1, currency: 'EUR' }), [{ path: 'price' }])
  t.match(await issues({ name: 'X', price: 1, currency: 'eur' }), [{ path: 'currency' }])
  t.match(await issues({ name: 'X', weight: 3 }), [{ path: 'weight', message: /unknown key/ }])
  t.match(await issues({ name: 'x'.repeat(limit('product.nameMaxUnits') + 1) }), [{ path: 'name' }])
  t.match(refused(t, await w.eddie.patch(`${BASE}/${(await w.eddie.post(BASE, { name: 'Y' })).body.product.id}`, { name: null }),
    400, 'INVALID_BODY').data.issues, [{ path: 'name' }], 'a name is never cleared')
})

t.test('the list: newest change first by updatedAt then id, paged by a cursor that carries both', async (t) => {
  const w = await world(t)
  const at = (second: number) => pinClock(w.service.db.owner, Date.UTC(2026, 0, 1, 0, 0, second))
  await at(1)
  const first = (await w.eddie.post(BASE, { externalId: 'p-0', name: 'First' })).body.product
  await at(2)
  // Four created at one instant: only the id orders them.
  for (const n of [1, 2, 3, 4]) await w.eddie.post(BASE, { externalId: `p-${n}`, name: `Tied ${n}` })
  await at(3)
  await w.eddie.post(BASE, { externalId: 'p-5', name: 'Later' })
  await at(4)
  await w.eddie.patch(`${BASE}/${first.id}`, { name: 'First, changed' })
  await unpinClock(w.service.db.owner)

  const seen = await listAll(w)
  t.equal(seen.length, 6)
  t.equal(new Set(seen.map((p) => p.id)).size, 6, 'no product twice across pages')
  t.same(seen.map((p) => p.name).slice(0, 2), ['First, changed', 'Later'], 'the last change first, whatever the creation order')
  const tied = seen.slice(2)
  t.equal(new Set(tied.map((p) => p.updatedAt)).size, 1)
  t.same(tied.map((p) => p.id), tied.map((p) => p.id).sort().reverse(), 'ties go by id, descending, across page breaks')
  t.same((await w.max.get(`${BASE}?externalId=p-3`)).body.page.map((p: Product) => p.name), ['Tied 3'])

  const page = await w.max.get(`${BASE}?limit=2`)
  t.equal(page.body.isDone, false)
  refused(t, await w.max.get(`${BASE}?cursor=`), 400, 'INVALID_QUERY')
  refused(t, await w.max.get(`${BASE}?externalId=p-1&cursor=${encodeURIComponent(page.body.continueCursor)}`), 400, 'INVALID_CURSOR')
  refused(t, await w.max.get(`/api/v1/contacts?cursor=${encodeURIComponent(page.body.continueCursor)}`), 400, 'INVALID_CURSOR',
    'a product cursor on the contact list')
})

t.test('members read; editors and above write; another organization sees none of it', async (t) => {
  const w = await world(t)
  const id = (await w.adam.post(BASE, { externalId: 'p-9', name: 'Owned' })).body.product.id
  t.equal((await w.max.get(BASE)).status, 200)
  refused(t, await w.max.post(BASE, { name: 'No' }), 403, 'ROLE_FORBIDDEN', 'a member creates')
  refused(t, await w.max.patch(`${BASE}/${id}`, { name: 'No' }), 403, 'ROLE_FORBIDDEN', 'a member changes')
  refused(t, await w.max.del(`${BASE}/${id}`), 403, 'ROLE_FORBIDDEN', 'a member deletes')
  refused(t, await w.gina.get(`${BASE}/${id}`), 404, 'PRODUCT_NOT_FOUND', 'another organization reads')
  refused(t, await w.gina.patch(`${BASE}/${id}`, { name: 'Mine' }), 404, 'PRODUCT_NOT_FOUND', 'another organization changes')
  refused(t, await w.gina.del(`${BASE}/${id}`), 404, 'PRODUCT_NOT_FOUND', 'another organization deletes')
  t.same((await w.gina.get(BASE)).body.page, [])
  t.equal((await w.gina.post(BASE, { externalId: 'p-9', name: 'Theirs' })).status, 201, 'natural keys are per organization')
  t.equal((await w.max.get(`${BASE}/${id}`)).body.product.name, 'Owned')
})
