/**
 * The README's code is what CI runs: a block marked `<!-- snippet: path -->` is that
 * example file verbatim (the example itself runs in scripts/run-examples.ts), and the
 * by-hand curl steps run here against a real server, printing the message and its 200, or
 * the 204 a newcomer must see when no mail comes.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { testNeeding } from '../support/tools.ts'

const ROOT = join(import.meta.dir, '..', '..')
const README = readFileSync(join(ROOT, 'README.md'), 'utf8')

test('every marked snippet equals its example file, the Playwright test among them', () => {
  const snippets = [...README.matchAll(/<!-- snippet: (\S+) -->\n```\w*\n([\s\S]*?)```\n/g)].map(([, path, body]) => ({
    path: path!,
    body: body!,
  }))
  expect(snippets.map((s) => s.path)).toContain('examples/playwright/signup.example.ts')
  for (const { path, body } of snippets)
    expect({ path, body }).toEqual({ path, body: readFileSync(join(ROOT, path), 'utf8') })
})

const byHand = (() => {
  const block = /By hand, the same steps are:\n\n```sh\n([\s\S]*?)```/.exec(README)
  if (!block) throw new Error('the README has no by-hand curl steps')
  return block[1]!
})()

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

/** Runs the README's steps with its local addresses pointed at the test server. */
async function runByHand(script: string, key: string) {
  const local = script
    .replaceAll('localhost:3000', new URL(server.url).host)
    .replaceAll('localhost:2525', `127.0.0.1:${server.app.smtpPort}`)
  const child = Bun.spawn(['bash', '-euo', 'pipefail', '-c', local], {
    env: { ...process.env, KEY: key },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, lines: stdout.trim().split('\n'), stderr }
}

testNeeding('curl')('the by-hand curl steps create, send, receive with 200 and delete with 204', async () => {
  const tenant = await server.tenant()
  const { code, lines, stderr } = await runByHand(byHand, tenant.key)
  expect(stderr).toBe('')
  expect(code).toBe(0)
  expect(lines[0]).toStartWith('{"data":{"id":"inbox_')
  expect(lines.at(-3)).toContain('"subject":"Hello"')
  expect(lines.at(-3)).toContain('It works.')
  expect(lines.slice(-2)).toEqual(['200', '204'])
  expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([])
})

testNeeding('curl')('without the send, the wait ends in a visible 204', async () => {
  const unsent = byHand
    .split('\n')
    .filter((line) => !line.includes('smtp://'))
    .join('\n')
    .replace('wait_seconds=30', 'wait_seconds=1')
  expect(unsent).not.toBe(byHand)
  const { code, lines } = await runByHand(unsent, (await server.tenant()).key)
  expect(code).toBe(0)
  expect(lines.slice(-3)).toEqual(['', '204', '204'])
})
