// drive.mjs: one interop scenario against an fsmcp binary, spoken to with a
// host's own MCP client, none of which shares code with the Go SDK the
// servers are built on:
//
//   sdk1       @modelcontextprotocol/sdk 1.x Client and StdioClientTransport
//              (what most hosts and the reference servers are built on)
//   client2    @modelcontextprotocol/client 2.x, in plan.mode: its default,
//              'auto' or { pin: '2026-07-28' }
//   inspector  the MCP Inspector's command line, one process per request,
//              in plan.mode: its default, or 'modern' (--protocol-era)
//
//   node interop/drive.mjs PLAN.json
//
// (or, with plan.scenario "validate", checks raw answers the Go tests
// captured against the 1.x SDK's schemas of the 2025 era).
//
// PLAN (written by e2e/interop_test.go) names the server command, the
// client, the scenario, the tool prefix ("" for a worker, "<root>_"
// through the supervisor), what the read root holds and the tools to use.
// The script asserts what it can see over the wire and prints one JSON
// line of facts for the Go test to check against the disk. Any failed
// assertion exits 1 with its message.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as StdioClientTransport1 } from '@modelcontextprotocol/sdk/client/stdio.js'
import * as types1 from '@modelcontextprotocol/sdk/types.js'

const MODERN = '2026-07-28'
const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest('hex')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const report = {}

// tap records every message the client receives and the method of every
// request it sends, by id.
function tap(transport) {
  const seen = { answers: [], methods: new Map() }
  const send = transport.send.bind(transport)
  transport.send = (msg, ...rest) => {
    if (msg.id !== undefined && msg.method) seen.methods.set(msg.id, msg.method)
    return send(msg, ...rest)
  }
  let handler
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler,
    set: (fn) => {
      handler = fn && ((msg, ...rest) => {
        if (msg.id !== undefined && (msg.result !== undefined || msg.error !== undefined)) seen.answers.push(msg)
        return fn(msg, ...rest)
      })
    },
  })
  return seen
}

// The result schemas of the 2025 revisions, as the 1.x SDK defines them.
const legacyResultSchemas = {
  initialize: types1.InitializeResultSchema,
  'tools/list': types1.ListToolsResultSchema,
  'tools/call': types1.CallToolResultSchema,
  ping: types1.EmptyResultSchema,
}

// checkLegacyAnswers: in the 2025 era every answer is a JSON-RPC response
// of the 1.x SDK's schemas, and no result carries the 2026-07-28 members.
// answers are { method, msg }: each message and the method it answers.
function checkLegacyAnswers(answers) {
  assert.ok(answers.length > 0, 'no answers seen')
  for (const { method, msg } of answers) {
    const line = JSON.stringify(msg).slice(0, 300)
    assert.ok(types1.JSONRPCResponseSchema.safeParse(msg).success, `not a JSON-RPC response of the 1.x SDK: ${line}`)
    if (msg.result === undefined) continue
    const schema = legacyResultSchemas[method]
    assert.ok(schema, `an answer to ${method}: ${line}`)
    const parsed = schema.safeParse(msg.result)
    assert.ok(parsed.success, `${method} result is not one of the 2025 era: ${parsed.error}\n${line}`)
    assert.equal(msg.result.resultType, undefined, `a 2025 result carries resultType: ${line}`)
    assert.equal(msg.result._meta?.['io.modelcontextprotocol/serverInfo'], undefined, `a 2025 result carries serverInfo: ${line}`)
  }
  report.legacyAnswers = answers.length
}

function stdioParams() {
  // The transports add their own short list of inherited variables (HOME,
  // PATH, ...) to env; the servers need none of them.
  return { command: plan.command, args: plan.args, env: plan.env ?? {}, stderr: 'inherit' }
}

// A session of an SDK client: listTools, callTool, the negotiated
// revision, the server's process id, and close.
async function sdkSession() {
  if (plan.client === 'sdk1') {
    const transport = new StdioClientTransport1(stdioParams())
    const seen = tap(transport)
    const client = new Client1({ name: 'fsmcp-interop', version: '1' })
    await client.connect(transport)
    const init = seen.answers.find((m) => seen.methods.get(m.id) === 'initialize')
    return { client, seen, pid: transport.pid, protocol: init?.result?.protocolVersion, era: 'legacy', close: () => client.close() }
  }
  const transport = new StdioClientTransport(stdioParams())
  const seen = tap(transport)
  const options = plan.mode ? { versionNegotiation: { mode: plan.mode } } : undefined
  const client = new Client({ name: 'fsmcp-interop', version: '1' }, options)
  await client.connect(transport)
  const era = client.getProtocolEra()
  if (era === 'modern') {
    const discover = client.getDiscoverResult()
    assert.deepEqual(discover.supportedVersions, plan.supportedVersions)
    assert.deepEqual(Object.keys(discover.capabilities), ['tools'])
  }
  return { client, seen, pid: transport.pid, protocol: client.getNegotiatedProtocolVersion(), era, close: () => client.close() }
}

// A session of the Inspector's command line: each request is a process of
// its own, which starts the server, makes the request and exits; so a
// cursor must outlive the server that issued it (plan.env holds the
// root's cursor key).
function inspectorSession() {
  const cli = join(dirname(fileURLToPath(import.meta.url)), 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js')
  const run = (args) =>
    new Promise((resolve, reject) => {
      const env = Object.entries(plan.env ?? {}).flatMap(([k, v]) => ['-e', `${k}=${v}`])
      const era = plan.mode ? ['--protocol-era', plan.mode] : []
      const argv = [cli, '--cli', ...args, ...env, ...era, '--format', 'json', '-q', '--', plan.command, ...plan.args]
      execFile(process.execPath, argv, { env: { PATH: process.env.PATH, HOME: plan.home }, maxBuffer: 16 << 20, timeout: 120000 }, (err, stdout, stderr) => {
        let out
        try {
          out = JSON.parse(stdout)
        } catch {
          reject(new Error(`inspector ${args.join(' ')}: ${err ?? ''} stdout ${stdout} stderr ${stderr}`))
          return
        }
        if (!out.result) reject(new Error(`inspector ${args.join(' ')}: ${stdout} ${stderr}`))
        else resolve(out.result)
      })
    })
  const client = {
    listTools: () => run(['--method', 'tools/list']),
    callTool: ({ name, arguments: a }) => run(['--method', 'tools/call', '--tool-name', name, '--tool-args-json', JSON.stringify(a)]),
  }
  return { client, era: plan.mode === 'modern' ? 'modern' : 'legacy', close: async () => {} }
}

// tools/list, following nextCursor until it is absent.
async function allTools(client) {
  const tools = []
  let cursor
  let pages = 0
  do {
    const res = await client.listTools(cursor === undefined ? undefined : { cursor })
    tools.push(...res.tools)
    cursor = res.nextCursor
    pages++
  } while (cursor !== undefined && pages < 100)
  assert.equal(cursor, undefined, 'tools/list never ended')
  return tools
}

async function callOk(client, name, args) {
  const res = await client.callTool({ name, arguments: args })
  assert.ok(!res.isError, `${name}(${JSON.stringify(args)}) failed: ${res.content?.[0]?.text}`)
  assert.equal(typeof res.structuredContent, 'object')
  return res.structuredContent
}

// toolError makes a call that must end in a tool error, a result the
// client accepts, and returns its text.
async function toolError(client, name, args) {
  const res = await client.callTool({ name, arguments: args })
  assert.equal(res.isError, true, `${name}(${JSON.stringify(args)}) succeeded`)
  assert.equal(res.content?.[0]?.type, 'text')
  return res.content[0].text
}

// Every page of a read tool, passing next_cursor back until it is null.
async function pages(client, name, args) {
  const out = []
  let cursor = null
  do {
    const page = await callOk(client, name, cursor === null ? args : { ...args, cursor })
    assert.deepEqual(Object.keys(page).sort(), ['content_hash', 'items', 'next_cursor'])
    assert.match(page.content_hash, /^sha256:[0-9a-f]{64}$/)
    out.push(page)
    cursor = page.next_cursor
  } while (cursor !== null && out.length < 1000)
  assert.equal(cursor, null, `${name} never reached next_cursor null`)
  return out
}

// host: what a host does: list the tools, page a listing, a read and a
// search to their ends, get a tool error as a result, write, and see a
// call past call_timeout as a tool error.
async function host(client) {
  const p = plan.prefix
  const tools = await allTools(client)
  report.tools = tools.map((t) => t.name).sort()
  assert.deepEqual(report.tools, [...plan.tools].sort())

  const listing = await pages(client, p + 'list_directory', { path: '', limit: 1 })
  report.listPages = listing.length
  // For listings the digest covers kind, NUL, path, LF per item.
  for (const pg of listing) assert.equal(pg.content_hash, 'sha256:' + sha256(pg.items.map((e) => `${e.kind}\0${e.path}\n`).join('')))
  assert.deepEqual(listing.flatMap((pg) => pg.items), plan.listing)

  // read_text_file one 2048-byte chunk a page; the chunks rebuild the file.
  const reads = await pages(client, p + 'read_text_file', { path: plan.bigFile, limit: 1 })
  report.readPages = reads.length
  const chunks = reads.flatMap((pg) => pg.items)
  assert.equal(chunks.map((c) => c.text).join(''), plan.files[plan.bigFile])
  for (const pg of reads) assert.equal(pg.content_hash, 'sha256:' + sha256(pg.items.map((c) => c.text).join('')))
  chunks.forEach((c, i) => i > 0 && assert.ok(c.byte_offset > chunks[i - 1].byte_offset))

  // search_text across pages of one match each.
  const hitPages = await pages(client, p + 'search_text', { query: plan.needle, limit: 1 })
  // For searches: path, NUL, line, NUL, text, LF per item.
  for (const pg of hitPages) assert.equal(pg.content_hash, 'sha256:' + sha256(pg.items.map((h) => `${h.path}\0${h.line}\0${h.text}\n`).join('')))
  report.searchHits = hitPages.flatMap((pg) => pg.items).map((h) => `${h.path}:${h.line}`)

  report.toolError = await toolError(client, p + 'read_text_file', { path: '../escape' })

  const body = `written by ${plan.client}\n`
  const w = await callOk(client, plan.writeTool, { path: plan.writePath, content: body })
  assert.equal(w.content_hash, 'sha256:' + sha256(body))
  report.write = w
  if (plan.readBackTool) {
    const back = await callOk(client, plan.readBackTool, { path: plan.writePath })
    assert.equal(back.content_hash, w.content_hash)
  }
  if (plan.stuckTool) report.timeout = await toolError(client, plan.stuckTool, { path: 'stuck.txt' })
}

// workerOf is the process id of the supervisor's live worker for root;
// with maybe, undefined when it has none.
function workerOf(supervisor, root, maybe = false) {
  for (const task of readdirSync(`/proc/${supervisor}/task`)) {
    for (const child of readFileSync(`/proc/${supervisor}/task/${task}/children`, 'utf8').split(' ').filter(Boolean)) {
      let argv, stat
      try {
        argv = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0')
        stat = readFileSync(`/proc/${child}/stat`, 'utf8')
      } catch {
        continue // gone meanwhile
      }
      const at = argv.indexOf('--name')
      if (at >= 0 && argv[at + 1] === root && !/\) [ZX] /.test(stat)) return Number(child)
    }
  }
  if (maybe) return undefined
  throw new Error(`no worker for root ${root} under ${supervisor}`)
}

// until calls fn until it returns a value, at most for ms.
async function until(what, ms, fn) {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v !== undefined) return v
    assert.ok(Date.now() < end, `${what} within ${ms} ms`)
    await sleep(50)
  }
}

async function readerServes(client) {
  await until('the reader back', 20000, async () => {
    const res = await client.callTool({ name: 'reader_read_text_file', arguments: { path: 'a.txt' } })
    return res.isError ? undefined : true
  })
}

// ownErrors: each tool error the supervisor makes itself reaches the host
// as a result its client accepts: a call past call_timeout (stuck), a call
// past a root's calls in flight (held), a root whose worker was killed, a
// worker that stopped answering its probes, and a call once a stop has
// begun.
async function ownErrors(session) {
  const { client, pid } = session
  const own = {}
  own.timeout = await toolError(client, 'stuck_read_text_file', { path: 'stuck.txt' })

  const held = Array.from({ length: plan.heldCalls + 1 }, () =>
    client.callTool({ name: 'held_read_text_file', arguments: { path: 'stuck.txt' } }).then((r) => ({ r }), (e) => ({ e })),
  )
  const first = await Promise.race(held)
  assert.ok(first.r?.isError, `the call past the quota: ${first.e ?? JSON.stringify(first.r)}`)
  own.busy = first.r.content[0].text

  // A root whose worker died is restarting for 100 ms, then twice as long
  // for each crash in a row: killed again as soon as it is back, it is
  // down long enough for a call to find it so.
  let last = 0
  for (let kill = 0; kill < 4 && !own.restarting; kill++) {
    const worker = await until('a new reader worker', 20000, async () => {
      const w = workerOf(pid, 'reader', true)
      return w && w !== last ? w : undefined
    })
    process.kill(worker, 'SIGKILL')
    last = worker
    const res = await client.callTool({ name: 'reader_read_text_file', arguments: { path: 'a.txt' } })
    if (res.isError) own.restarting = res.content[0].text
  }
  await readerServes(client)

  // A stopped process answers nothing, so a call that succeeds was served
  // by a reader worker other than the one found (one the supervisor was
  // still replacing when /proc was read): that one is let go, and the
  // worker found then is stopped instead.
  for (let attempt = 1; !own.notResponding; attempt++) {
    const worker = workerOf(pid, 'reader')
    process.kill(worker, 'SIGSTOP')
    const res = await client.callTool({ name: 'reader_read_text_file', arguments: { path: 'a.txt' } })
    if (res.isError) {
      assert.equal(res.content?.[0]?.type, 'text')
      own.notResponding = res.content[0].text
      break
    }
    process.kill(worker, 'SIGCONT')
    assert.ok(attempt < 3, `reader_read_text_file succeeded ${attempt} times with the reader worker found stopped`)
    console.error(`interop: worker ${worker} was stopped, yet the call succeeded; stopping the one found now`)
  }
  await readerServes(client)

  // The held calls are still in flight, so the stop waits for them (up to
  // --grace) while it refuses new calls.
  process.kill(pid, 'SIGTERM')
  own.shuttingDown = await until('a refusal once stopping', 5000, async () => {
    const res = await client.callTool({ name: 'reader_read_text_file', arguments: { path: 'a.txt' } })
    return res.isError ? res.content[0].text : undefined
  })
  report.own = own
  await Promise.all(held)
}

// refused: a client of the 2025 era cannot connect to the worker; the
// error says what to do.
async function refused() {
  let err
  const session = plan.client === 'sdk1' ? Client1 : Client
  const client = new session({ name: 'fsmcp-interop', version: '1' })
  try {
    await client.connect(plan.client === 'sdk1' ? new StdioClientTransport1(stdioParams()) : new StdioClientTransport(stdioParams()))
  } catch (e) {
    err = e
  } finally {
    await client.close().catch(() => {})
  }
  assert.ok(err, 'a 2025 initialize was accepted')
  report.refused = { code: err.code, message: err.message, supported: err.data?.supported }
}

// validate: plan.answers, raw answers of the 2025 era with the method each
// answers, are checked as a 2025 client's answers are.
function validate() {
  checkLegacyAnswers(plan.answers.map(({ method, answer }) => ({ method, msg: answer })))
}

async function scenario() {
  if (plan.scenario === 'refused') return refused()
  if (plan.scenario === 'validate') return validate()
  const session = plan.client === 'inspector' ? inspectorSession() : await sdkSession()
  report.protocol = session.protocol
  report.era = session.era
  try {
    if (plan.scenario === 'ownErrors') await ownErrors(session)
    else await host(session.client)
  } finally {
    await session.close().catch(() => {})
  }
  if (session.era === 'legacy' && session.seen) {
    const { answers, methods } = session.seen
    checkLegacyAnswers(answers.map((msg) => ({ method: methods.get(msg.id), msg })))
  }
}

try {
  await scenario()
  console.log(JSON.stringify(report))
  process.exit(0)
} catch (e) {
  console.error(`interop: ${e?.stack ?? e}`)
  process.exit(1)
}
