// Products (/api/v1/products): what the organization sells, by an optional natural key
// (externalId) (docs/records.md). Rules in db/functions/0141_products.sql.
import * as v from 'valibot'
import type { Route } from './route.ts'
import { integerParam, uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'
import { recordAttributes } from './contacts.ts'

const EXTERNAL_ID_MAX = limit('contact.externalIdMaxUnits')
const NAME_MAX = limit('product.nameMaxUnits')
const DESCRIPTION_MAX = limit('product.descriptionMaxUnits')
const SKU_MAX = limit('product.skuMaxUnits')
const PRICE_MAX = limit('product.priceMax')

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const units = (max: number) => v.maxLength<string, number, string>(max, `at most ${max} UTF-16 code units`)
const text = (max: number) => v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), units(max))

const product = component('Product', v.strictObject({
  id: v.string(),
  externalId: v.pipe(v.nullable(v.string()), v.description('The natural key: the product\'s id in another system')),
  name: v.string(),
  description: v.nullable(v.string()),
  sku: v.nullable(v.string()),
  price: v.pipe(v.nullable(v.number()), v.description('In currency')),
  currency: v.pipe(v.nullable(v.string()), v.description('ISO 4217 code; present whenever price is')),
  attributes: v.record(v.string(), v.unknown()),
  createdAt: timestamp,
  updatedAt: timestamp,
}))

const fields = {
  externalId: v.optional(v.nullable(v.pipe(text(EXTERNAL_ID_MAX),
    v.description('The natural key: a create naming an externalId a product holds updates that product')))),
  description: v.optional(v.nullable(v.pipe(v.string(), units(DESCRIPTION_MAX)))),
  sku: v.optional(v.nullable(text(SKU_MAX))),
  price: v.optional(v.nullable(v.pipe(v.number(), v.finite(), v.minValue(0), v.maxValue(PRICE_MAX),
    v.description('Needs a currency, sent with it or stored')))),
  currency: v.optional(v.nullable(v.pipe(v.string(), v.regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as EUR')))),
}
const createBody = v.strictObject({
  ...fields,
  name: v.optional(v.pipe(text(NAME_MAX), v.description('Required unless the externalId names a product'))),
  attributes: v.optional(v.pipe(recordAttributes, v.description('Merged key by key into a product the externalId names'))),
})
const updateBody = v.strictObject({
  ...fields,
  name: v.optional(text(NAME_MAX)),
  attributes: v.optional(v.pipe(recordAttributes, v.description('Replaces the stored attributes'))),
})

const idParams = v.strictObject({ id: uuidParam })

export const productRoutes: Route[] = [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/products', tag: 'Products', operation: 'products_list', family: 'keyset',
    summary: 'List the organization\'s products, most recently changed first (updatedAt, then id, descending)', errors: [400],
    query: v.strictObject({
      limit: v.optional(integerParam(1)), cursor: v.optional(v.string()),
      externalId: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), units(EXTERNAL_ID_MAX),
        v.description('Only the product of this natural key'))),
    }),
    response: v.strictObject({ page: v.array(product), isDone: v.boolean(), continueCursor: v.string() }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/products', tag: 'Products', operation: 'product_create',
    summary: 'Create a product (201), or update the product its externalId names (200, created:false): the fields sent replace, the omitted are kept',
    errors: [400, 403], body: createBody,
    response: v.strictObject({ product, created: v.boolean() }),
    status: (body) => (body.created ? 201 : 200),
    location: (body) => (body.created ? `/api/v1/products/${body.product.id}` : undefined),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/products/:id', tag: 'Products', operation: 'product_get',
    summary: 'Read a product', errors: [404], params: idParams, response: v.strictObject({ product }),
  },
  {
    kind: 'operation', method: 'PATCH', path: '/api/v1/products/:id', tag: 'Products', operation: 'product_update',
    summary: 'Change a product: the fields sent replace the stored ones (null clears; attributes are replaced whole)',
    errors: [400, 403, 404, 409], params: idParams, body: updateBody, response: v.strictObject({ product }),
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/products/:id', tag: 'Products', operation: 'product_delete',
    summary: 'Delete a product', status: 204, errors: [403, 404], params: idParams,
  },
]
