// An OpenAI-compatible model provider on loopback, streaming as the real ones do
// (server-sent events of chat.completion.chunk), for chat, llm steps and agents. The
// model named in the request picks the behaviour:
//   echo-model   streams "echo: <last user message>" a word per chunk
//   slow-model   the same, 120 ms between words (long enough to watch and to stop)
//   short-model  streams words, cut at max_tokens words with finish_reason length
//   fail-model   answers 500
//   hang-model   sends one chunk, then nothing
//   tool-model   (whole answers) asks for the tool calls a JSON user message lists as
//                {"calls": [{"name", "arguments"}]}, else for the first tool offered;
//                once tools answered, answers with what the last one said
//   loop-model   (whole answers) asks for the first tool offered, every time
//   slow-model   whole answers come after 300 ms
//   slow-loop-model  loop-model, each answer after 300 ms
//   surrogate-model  (whole answers) answers with an unpaired surrogate escaped in its JSON
// tool-model and loop-model answer a streamed request as a stream of the same message
// (tool calls as deltas). POST /embeddings answers 64-dimensional bag-of-words vectors (hashed words),
// so texts sharing words are near; a model named fail-embed answers 500.
// Any request with a key other than `sk-fake` is answered 401.
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface FakeProvider {
  url: string
  /** Request bodies received, newest last. */
  requests: any[]
}

const KEY = 'Bearer sk-fake'

/** What closes the provider at the end: a tap test, or the soak's own list of teardowns. */
export interface Teardowns { teardown(close: () => Promise<void>): void }

export async function fakeProvider(t: Teardowns): Promise<FakeProvider> {
  const requests: any[] = []
  const hanging = new Set<http.ServerResponse>()
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const embeddings = req.url?.endsWith('/embeddings')
    if (!req.url?.endsWith('/chat/completions') && !embeddings) return json(res, 404, { error: { message: 'no route' } })
    if (req.headers.authorization !== KEY) return json(res, 401, { error: { message: 'bad key', type: 'invalid_request_error' } })
    const body = JSON.parse(Buffer.concat(chunks).toString()) as any
    requests.push(body)
    if (embeddings) {
      if (body.model === 'fail-embed') return json(res, 500, { error: { message: 'the embedder fell over' } })
      const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input]
      return json(res, 200, { object: 'list', model: body.model, usage: { prompt_tokens: 0, total_tokens: 0 },
        data: inputs.map((input, index) => ({ object: 'embedding', index, embedding: bagOfWords(input) })) })
    }
    const lastUser = [...body.messages].reverse().find((m: any) => m.role === 'user')?.content ?? ''
    switch (body.model) {
      case 'fail-model': return json(res, 500, { error: { message: 'the model fell over' } })
      case 'tool-model': return toolAnswer(res, body)
      case 'surrogate-model': {
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(JSON.stringify(completion('broken PLACEHOLDER answer', 'stop')).replace('PLACEHOLDER', '\\ud800'))
      }
      case 'slow-loop-model':
        await new Promise((r) => setTimeout(r, 300))
      // falls through
      case 'loop-model': {
        const tool = body.tools?.[0]?.function?.name ?? 'none'
        const asked = completion(null, 'tool_calls', [{ id: `call-${requests.length}`, type: 'function', function: { name: tool, arguments: '{}' } }])
        return body.stream ? streamWhole(res, asked) : json(res, 200, asked)
      }
      case 'hang-model': {
        hanging.add(res)
        startStream(res)
        return send(res, { content: 'Thinking' })
      }
      case 'short-model': {
        const words = lastUser.split(/\s+/).filter(Boolean)
        const max = body.max_tokens ?? Infinity
        return streamWords(res, words.slice(0, max).map((w: string, i: number) => (i ? ` ${w}` : w)), 0, words.length > max ? 'length' : 'stop')
      }
      default: {
        const words = `echo: ${lastUser}`.split(' ').map((w, i) => (i ? ` ${w}` : w))
        if (!body.stream) {
          if (body.model === 'slow-model') await new Promise((r) => setTimeout(r, 300))
          return json(res, 200, completion(words.join(''), 'stop'))
        }
        return streamWords(res, words, body.model === 'slow-model' ? 120 : 5, 'stop')
      }
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const res of hanging) res.destroy()
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests }
}

const whole = (res: http.ServerResponse, status: number, value: unknown) => json(res, status, value)

// A whole completion sent as the stream a provider would send for it.
function streamWhole(res: http.ServerResponse, value: any) {
  const message = value.choices[0].message
  startStream(res)
  if (message.content) send(res, { role: 'assistant', content: message.content })
  for (const [index, call] of (message.tool_calls ?? []).entries()) {
    send(res, { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] })
    send(res, { tool_calls: [{ index, function: { arguments: call.function.arguments } }] })
  }
  send(res, {}, value.choices[0].finish_reason)
  res.end('data: [DONE]\n\n')
}

function bagOfWords(text: string): number[] {
  const vector = new Array<number>(64).fill(0)
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let hash = 0
    for (const char of word) hash = (hash * 31 + char.charCodeAt(0)) >>> 0
    vector[hash % 64]! += 1
  }
  return vector
}

function json(res: http.ServerResponse, status: number, value: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(value))
}

function completion(content: string | null, finish: string, toolCalls?: unknown[]) {
  return { id: 'cmpl-1', object: 'chat.completion', created: 0, model: 'fake',
    choices: [{ index: 0, finish_reason: finish, message: { role: 'assistant', content, ...(toolCalls ? { tool_calls: toolCalls } : {}) } }] }
}

function startStream(res: http.ServerResponse) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
}

function send(res: http.ServerResponse, delta: Record<string, unknown>, finish: string | null = null) {
  res.write(`data: ${JSON.stringify({ id: 'chunk-1', object: 'chat.completion.chunk', created: 0, model: 'fake',
    choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`)
}

async function streamWords(res: http.ServerResponse, words: string[], delayMs: number, finish: string) {
  startStream(res)
  for (const word of words) {
    if (res.destroyed) return
    send(res, { content: word })
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs))
  }
  send(res, {}, finish)
  res.end('data: [DONE]\n\n')
}

// Asks for the calls a JSON user message lists, else for the first tool offered;
// once a tool answered, answers with what the last one said.
function toolAnswer(res: http.ServerResponse, body: any) {
  const json = (res: http.ServerResponse, status: number, value: any) => (body.stream ? streamWhole(res, value) : whole(res, status, value))
  const toolResult = [...body.messages].reverse().find((m: any) => m.role === 'tool')
  if (toolResult) return json(res, 200, completion(`tool said: ${toolResult.content}`, 'stop'))
  const lastUser = [...body.messages].reverse().find((m: any) => m.role === 'user')?.content ?? ''
  let listed: { name: string; arguments: unknown }[] | null = null
  try {
    listed = JSON.parse(lastUser).calls ?? null
  } catch { /* plain text: the first tool */ }
  const calls = listed ?? (body.tools?.[0] ? [{ name: body.tools[0].function.name, arguments: {} }] : [])
  if (calls.length === 0) return json(res, 200, completion('no tools to use', 'stop'))
  return json(res, 200, completion(null, 'tool_calls', calls.map((c, i) => ({
    id: `call-${i + 1}`, type: 'function', function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
  }))))
}
