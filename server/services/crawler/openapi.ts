// The crawler service's own OpenAPI 3.1 document, built from the valibot schemas that
// check its requests (schemas.ts); /docs renders it (server/core/internal-service).
import * as v from 'valibot'
import { commonDocument, jsonSchemaOf as schema } from '../../core/internal-service/docs.ts'
import { limit } from '../../core/limits.ts'
import * as s from './schemas.ts'

type Json = Record<string, unknown>

const json = (body: Json) => ({ 'application/json': { schema: body } })
const error = (description: string) => ({ description, content: json({ $ref: '#/components/schemas/Error' }) })

const errors = {
  400: error('INVALID_BODY: the body is malformed; data.issues lists every problem with its path'),
  401: error('UNAUTHORIZED: CRAWLER_TOKEN is set and the request does not carry it as a bearer token'),
  404: error('WEBSITE_NOT_FOUND: the service has no website of this domain'),
  405: error('METHOD_NOT_ALLOWED: the path exists, the verb does not'),
  413: error('BODY_TOO_LARGE: the body exceeds 1 MiB'),
  500: error('INTERNAL_ERROR'),
}
const pick = (...codes: (keyof typeof errors)[]) => Object.fromEntries(codes.map((code) => [String(code), errors[code]]))
const domainParameter = {
  name: 'domain', in: 'path', required: true, schema: { type: 'string' },
  description: 'The website\'s domain, as it was added (example.com, 127.0.0.1:8080); URL-encoded.',
}
const websiteAnswer = v.strictObject({ website: s.websiteAnswer })

export function crawlerDocument(version: string): Json {
  const common = commonDocument('crawler', 'CRAWLER_TOKEN')
  return {
    openapi: '3.1.0',
    info: {
      title: 'Crawler service', version,
      description: 'Scans websites at an interval (robots.txt, sitemaps, links; conditional re-scans; an address guard) and keeps '
        + 'their pages\' readable text, indexed through the indexing pipeline; reads URLs from that cache or live. Every refusal is {error, code, data}.',
      'x-tale-limits': { 'crawler.maxPagesPerScan': limit('crawler.maxPagesPerScan'), 'crawler.pageMaxBytes': limit('crawler.pageMaxBytes'),
                         'crawler.maxRedirects': limit('crawler.maxRedirects'), 'crawler.fetchUrlsMax': limit('crawler.fetchUrlsMax') },
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths: {
      '/api/v1/websites': {
        post: {
          operationId: 'addWebsite', summary: 'Add a website and scan it now (201), or change the interval of the one its domain names (200)',
          requestBody: { required: true, content: json(schema(s.websiteBody, 'input')) },
          responses: {
            201: { description: 'Added; its first scan is queued', content: json(schema(v.strictObject({ website: s.websiteAnswer, created: v.literal(true) }), 'output')) },
            200: { description: 'The domain\'s website, its interval changed', content: json(schema(v.strictObject({ website: s.websiteAnswer, created: v.literal(false) }), 'output')) },
            ...pick(400, 401, 413, 500),
          },
        },
      },
      '/api/v1/websites/{domain}': {
        get: {
          operationId: 'getWebsite', summary: 'A website and its scan state', parameters: [domainParameter],
          responses: { 200: { description: 'The website', content: json(schema(websiteAnswer, 'output')) }, ...pick(401, 404, 500) },
        },
        delete: {
          operationId: 'deleteWebsite', summary: 'Delete a website, its pages and their passages', parameters: [domainParameter],
          responses: { 204: { description: 'Deleted' }, ...pick(401, 404, 500) },
        },
      },
      '/api/v1/websites/{domain}/urls': {
        get: {
          operationId: 'websiteUrls', summary: 'Every URL the scans have seen on the website, by URL', parameters: [domainParameter],
          responses: {
            200: { description: 'The URLs', content: json(schema(v.strictObject({ domain: v.string(), urls: v.array(s.urlAnswer) }), 'output')) },
            ...pick(401, 404, 500),
          },
        },
      },
      '/api/v1/urls/fetch': {
        post: {
          operationId: 'fetchUrls', summary: 'The readable text of URLs: a scanned page from the cache, any other fetched live (robots.txt and the address guard apply)',
          requestBody: { required: true, content: json(schema(s.fetchBody, 'input')) },
          responses: {
            200: { description: 'One result per URL, in the order asked', content: json(schema(v.strictObject({ results: v.array(s.fetchResult) }), 'output')) },
            ...pick(400, 401, 413, 500),
          },
        },
      },
      ...common.paths,
    },
    components: common.components,
  }
}
