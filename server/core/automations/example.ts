// A complete automation document that uses most of the format: served to authoring
// agents as the example to start from, and kept valid (and its tests passing) by
// the test suite.
export const exampleDocument = {
  name: 'sales/lead-intake',
  description: 'Classify a lead and ask for approval before creating a task',
  inputs: {
    type: 'object',
    properties: { trigger: { type: 'string' }, payload: { type: 'object' } },
    required: ['payload'],
  },
  config: {
    timeoutMs: 300_000,
    retry: { maxRetries: 2, backoffMs: 1000 },
    variables: { threshold: 0.5 },
  },
  steps: [
    {
      slug: 'classify', type: 'llm',
      config: {
        model: 'local-echo', system: 'Score the lead 0..1', prompt: '{{ input.payload.text }}', outputFormat: 'json',
        outputSchema: { type: 'object', properties: { score: { type: 'number' } }, required: ['score'] },
      },
      mock: { score: 0.9 },
      next: { success: 'route' },
    },
    {
      slug: 'route', type: 'condition',
      config: { expression: 'steps.classify.output.score > config.threshold' },
      next: { true: 'approve', false: 'end' },
    },
    { slug: 'approve', type: 'approval', config: { title: 'Create a task for {{ input.payload.name }}?' }, next: { approved: 'task', rejected: 'end' } },
    {
      slug: 'task', type: 'action',
      config: { action: 'task.create', params: { title: 'Lead {{ input.payload.name }}' } },
      mock: { taskId: 'task-1' },
      next: { success: 'end' },
    },
    { slug: 'end', type: 'output', config: { mapping: { score: '{{ steps.classify.output.score }}' } } },
  ],
  tests: [
    {
      name: 'a low score ends without approval',
      input: { payload: { text: 'hi', name: 'Ada' } },
      mocks: { classify: { score: 0.1 } },
      expect: { status: 'completed', output: { score: 0.1 } },
    },
    {
      name: 'a high score waits for approval',
      input: { payload: { text: 'buying 500 seats', name: 'Ada' } },
      expect: { status: 'waiting' },
    },
    {
      name: 'an approved lead becomes a task',
      input: { payload: { text: 'buying 500 seats', name: 'Ada' } },
      answers: { approve: 'approved' },
      expect: { status: 'completed', output: { score: 0.9 } },
    },
  ],
}
