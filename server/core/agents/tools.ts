// The tool grants a project agent may hold, as the function calls its model is
// offered. The ids and their descriptions are the deployment's list (app.agent_tools(),
// shown by GET /api/v1/models); the parameters are declared here, once. Model
// providers allow no dots in a function's name, so `tasks.read` is offered as
// `tasks_read`.
import type { ToolDefinition } from '../models/provider.ts'

const id = { type: 'string', description: 'The id of the task, as tasks_read lists it' }

export const TOOL_PARAMETERS: Readonly<Record<string, Record<string, unknown>>> = {
  'files.read': {
    type: 'object', additionalProperties: false,
    properties: { fileId: { type: 'string', description: 'Read this file\'s text; without it, list the project\'s files' } },
  },
  'tasks.read': {
    type: 'object', additionalProperties: false,
    properties: {
      taskId: { ...id, description: 'Read this task with its latest comments; without it, list the project\'s open tasks' },
      status: { type: 'string', enum: ['backlog', 'todo', 'in_progress', 'in_review', 'done', 'cancelled'], description: 'List only tasks in this status' },
    },
  },
  'tasks.create': {
    type: 'object', additionalProperties: false, required: ['title'],
    properties: {
      title: { type: 'string', description: 'Up to 200 characters' },
      description: { type: 'string', description: 'Up to 20,000 characters' },
      labels: { type: 'array', items: { type: 'string' }, description: 'Label names of the project' },
    },
  },
  'tasks.comment': {
    type: 'object', additionalProperties: false, required: ['taskId', 'body'],
    properties: { taskId: id, body: { type: 'string', description: 'The comment; @email mentions notify members' } },
  },
  'tasks.update': {
    type: 'object', additionalProperties: false, required: ['taskId', 'status'],
    properties: { taskId: id, status: { type: 'string', enum: ['backlog', 'todo', 'in_progress', 'in_review', 'done', 'cancelled'] } },
  },
  'web.fetch': {
    type: 'object', additionalProperties: false, required: ['url'],
    properties: { url: { type: 'string', description: 'An absolute http or https address of a public page' } },
  },
}

export const functionName = (tool: string) => tool.replaceAll('.', '_')

/** The functions offered for an agent's grants (ids with their descriptions). */
export function toolDefinitions(granted: { id: string; description: string }[]): ToolDefinition[] {
  return granted.flatMap((tool) => {
    const parameters = TOOL_PARAMETERS[tool.id]
    return parameters ? [{ name: functionName(tool.id), description: tool.description, parameters }] : []
  })
}

/** The assistant's tools in a project thread: the project's files, read and searched. */
export const PROJECT_THREAD_TOOLS: ToolDefinition[] = [
  { name: functionName('files.read'), description: 'Read a file of this project as text (a plain-text file of up to 4 MiB even when it is not indexed); without fileId, list the project\'s files',
    parameters: TOOL_PARAMETERS['files.read']! },
  { name: functionName('files.search'), description: 'Search the project\'s indexed files; answers the best matching passages with their file, page and heading',
    parameters: { type: 'object', additionalProperties: false, required: ['query'], properties: {
      query: { type: 'string', description: 'What to look for; quoted phrases, OR and -word work as in a web search' },
      topK: { type: 'integer', minimum: 1, maximum: 20, description: 'How many passages, 5 by default' },
    } } },
]

/** The tool id a function name stands for, among the given ids. */
export const toolId = (name: string, ids: readonly string[]) => ids.find((id) => functionName(id) === name) ?? null
