import * as v from 'valibot'
import type { Route } from './route.ts'
import { integerParam, uuidParam } from '../transport/validation.ts'

const project = v.strictObject({
  id: v.string(), name: v.string(), key: v.nullable(v.string()), description: v.nullable(v.string()),
  externalItemId: v.nullable(v.string()), archivedAt: v.optional(v.number()),
  createdAt: v.number(), updatedAt: v.number(),
})

const name = v.pipe(v.string(), v.maxLength(200, 'at most 200 characters'))
const description = v.pipe(v.string(), v.maxLength(20_000, 'at most 20000 characters'))
const externalItemId = v.pipe(v.string(), v.maxLength(512, 'at most 512 characters'))
const idParams = v.strictObject({ id: uuidParam })

export const projectRoutes: Route[] = [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects', tag: 'Projects', operation: 'projects_list',
    family: 'keyset', summary: 'List projects newest first, or look one up by externalItemId',
    query: v.strictObject({
      limit: v.optional(integerParam(1)),
      cursor: v.optional(v.string()),
      archived: v.optional(v.picklist(['include', 'only'], 'must be include or only')),
      externalItemId: v.optional(externalItemId),
    }),
    response: v.strictObject({
      projects: v.array(project), isDone: v.boolean(), continueCursor: v.string(),
      cursor: v.optional(v.string()),
    }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects', tag: 'Projects', operation: 'project_create',
    summary: 'Create a project', status: 201, errors: [400, 403, 409],
    body: v.strictObject({
      name,
      key: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z][A-Za-z0-9]{1,5}$/, 'must be 2-6 letters or digits starting with a letter'))),
      description: v.optional(v.nullable(description)),
      externalItemId: v.optional(v.nullable(externalItemId)),
    }),
    response: v.strictObject({ project }),
    location: (body) => `/api/v1/projects/${body.project.id}`,
  },
  {
    kind: 'operation', method: 'PATCH', path: '/api/v1/projects/:id', tag: 'Projects', operation: 'project_update',
    summary: 'Archive, restore, rename or describe a project', errors: [400, 403, 404, 409],
    params: idParams,
    body: v.strictObject({
      archived: v.optional(v.boolean()),
      name: v.optional(name),
      description: v.optional(v.nullable(description)),
      externalItemId: v.optional(v.nullable(externalItemId)),
    }),
    response: v.strictObject({ project }),
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/projects/:id', tag: 'Projects', operation: 'project_delete',
    summary: 'Delete a project (cascade by default, or detach)', status: 204, errors: [403, 404, 409, 429],
    params: idParams,
    body: v.strictObject({ mode: v.optional(v.picklist(['cascade', 'detach'])) }),
  },
]
