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
