// drive.mjs: one interop scenario against an fsmcp binary, spoken to with the
// TypeScript MCP client (@modelcontextprotocol/client 2.x), which shares no
// code with the Go SDK the servers are built on.
//
//   node interop/drive.mjs PLAN.json
//
// PLAN (written by e2e/interop_test.go) names the server command, the
// negotiation mode, the tool prefix ("" for a worker, "<root>_" through the
// supervisor), what the read root holds and the write tool to use. The script asserts what it can
// see over the wire and prints one JSON line of facts for the Go test to
// check against the disk. Any failed assertion exits 1 with its message.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Client, UnsupportedProtocolVersionError } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'

const PROTOCOL = '2026-07-28'
const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest('hex')
const report = {}

function transport() {
  // The transport adds its own short list of inherited variables (HOME,
  // PATH, ...) to env; the servers need none of them.
  return new StdioClientTransport({ command: plan.command, args: plan.args, env: plan.env ?? {}, stderr: 'inherit' })
}

// The client's default negotiation is the 2025 initialize handshake. The
// worker refuses it with -32022 naming the one revision it speaks; the
// supervisor serves it (plan.legacy "served").
async function legacy() {
  if (plan.legacy === 'served') {
    const client = new Client({ name: 'fsmcp-interop', version: '1' })
    try {
      await client.connect(transport())
      assert.equal(client.getProtocolEra(), 'legacy')
      report.legacy = { protocol: client.getNegotiatedProtocolVersion(), tools: (await allTools(client)).length }
    } finally {
      await client.close()
    }
    return
  }
  const client = new Client({ name: 'fsmcp-interop', version: '1' })
  let err
  try {
    await client.connect(transport())
  } catch (e) {
    err = e
  } finally {
    await client.close().catch(() => {})
  }
  assert.ok(err, 'a legacy initialize was accepted')
  assert.ok(err instanceof UnsupportedProtocolVersionError, `legacy connect failed with ${err}, want UnsupportedProtocolVersionError`)
  assert.equal(err.code, -32022)
  assert.deepEqual(err.data.supported, [PROTOCOL])
  report.legacy = { code: err.code, supported: err.data.supported }
}

async function connect(mode) {
  const client = new Client({ name: 'fsmcp-interop', version: '1' }, { versionNegotiation: { mode } })
  await client.connect(transport())
  assert.equal(client.getNegotiatedProtocolVersion(), PROTOCOL)
  assert.equal(client.getProtocolEra(), 'modern')
  const discover = client.getDiscoverResult()
  assert.deepEqual(discover.supportedVersions, plan.legacy === 'served' ? [PROTOCOL, '2025-11-25', '2025-06-18', '2025-03-26'] : [PROTOCOL])
  assert.deepEqual(Object.keys(discover.capabilities), ['tools'])
  return client
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

async function scenario() {
  await legacy()
  const client = await connect(plan.mode ?? { pin: PROTOCOL })
  try {
    const p = plan.prefix
    const tools = await allTools(client)
    report.tools = tools.map((t) => t.name).sort()
    assert.deepEqual(report.tools, [...plan.tools].sort())

    // list_directory one entry a page.
    const listing = await pages(client, p + 'list_directory', { path: '', limit: 1 })
    report.listPages = listing.length
    const listed = listing.flatMap((pg) => pg.items)
    // For listings the digest covers kind, NUL, path, LF per item.
    for (const pg of listing) assert.equal(pg.content_hash, 'sha256:' + sha256(pg.items.map((e) => `${e.kind}\0${e.path}\n`).join('')))
    assert.deepEqual(listed, plan.listing)

    // read_text_file one 2048-byte chunk a page; the chunks rebuild the file.
    const reads = await pages(client, p + 'read_text_file', { path: plan.bigFile, limit: 1 })
    report.readPages = reads.length
    const chunks = reads.flatMap((pg) => pg.items)
    const text = chunks.map((c) => c.text).join('')
    assert.equal(text, plan.files[plan.bigFile])
    for (const pg of reads) assert.equal(pg.content_hash, 'sha256:' + sha256(pg.items.map((c) => c.text).join('')))
    chunks.forEach((c, i) => i > 0 && assert.ok(c.byte_offset > chunks[i - 1].byte_offset))

    // search_text across pages of one match each.
    const hitPages = await pages(client, p + 'search_text', { query: plan.needle, limit: 1 })
    // For searches: path, NUL, line, NUL, text, LF per item.
    for (const pg of hitPages) assert.equal(pg.content_hash, 'sha256:' + sha256(pg.items.map((h) => `${h.path}\0${h.line}\0${h.text}\n`).join('')))
    const hits = hitPages.flatMap((pg) => pg.items)
    report.searchHits = hits.map((h) => `${h.path}:${h.line}`)

    // A tool error stays a result, not a protocol error.
    const bad = await client.callTool({ name: p + 'read_text_file', arguments: { path: '../escape' } })
    assert.equal(bad.isError, true)
    report.toolError = bad.content[0].text

    // write_text_file, then (where the same root reads) read it back.
    const body = 'written by the TypeScript client\n'
    const w = await callOk(client, plan.writeTool, { path: plan.writePath, content: body })
    assert.equal(w.content_hash, 'sha256:' + sha256(body))
    report.write = w
    if (plan.readBackTool) {
      const back = await callOk(client, plan.readBackTool, { path: plan.writePath })
      assert.equal(back.content_hash, w.content_hash)
    }
  } finally {
    await client.close()
  }
}

try {
  await scenario()
  console.log(JSON.stringify(report))
} catch (e) {
  console.error(`interop: ${e?.stack ?? e}`)
  process.exit(1)
}
