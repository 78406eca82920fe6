import * as v from 'valibot'
import type { Route } from './route.ts'
import { uuidParam } from '../transport/validation.ts'
import type { ObjectStore } from '../core/storage/object-store.ts'
import { observeStore } from '../core/storage/observe.ts'

const folder = v.strictObject({ id: v.string(), name: v.string(), parentId: v.nullable(v.string()), createdAt: v.number() })
// Any non-blank string: one that names no folder of the project answers FOLDER_NOT_FOUND.
const folderRef = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), v.maxLength(200))
const projectParams = v.strictObject({ id: uuidParam })
const folderParams = v.strictObject({ id: uuidParam, folderId: folderRef })

export function folderRoutes(store: ObjectStore | null): Route[] {
  return [
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/folders', tag: 'Folders', operation: 'folder_create',
    summary: 'Create a folder, or get the one of that name under the same parent', errors: [403, 404, 409],
    params: projectParams,
    body: v.strictObject({ name: v.pipe(v.string(), v.maxLength(1000)), parentId: v.optional(v.nullable(folderRef)) }),
    response: v.strictObject({ folder, created: v.boolean() }),
    status: (body) => (body.created ? 201 : 200),
    location: (body, input) => (body.created ? `/api/v1/projects/${String(input.params.id)}/folders/${body.folder.id}` : undefined),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/folders', tag: 'Folders', operation: 'folders_list',
    family: 'unpaginated', summary: 'The folders of one level (the root when parentId is omitted)', errors: [404],
    params: projectParams,
    query: v.strictObject({ parentId: v.optional(folderRef) }),
    response: v.strictObject({ folders: v.array(folder) }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/folders/:folderId', tag: 'Folders', operation: 'folder_get',
    summary: 'Read a folder', errors: [404], params: folderParams,
    response: v.strictObject({ folder }),
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/projects/:id/folders/:folderId', tag: 'Folders', operation: 'folder_delete',
    summary: 'Delete a folder and everything beneath it', status: 204, errors: [403, 404, 503], params: folderParams,
    // The files' objects are removed after the rows; the store must answer first.
    observe: () => observeStore(store),
  },
  ]
}
