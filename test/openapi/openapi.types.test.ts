/**
 * openapi-typescript turns the served document into TypeScript types, and a small client
 * (client/client.ts) type-checks against them with the project's compiler.
 */
import { afterAll, beforeAll, expect, mock, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'

const ROOT = join(import.meta.dir, '..', '..')
const CLIENT_DIR = join(import.meta.dir, 'client')
let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  rmSync(join(CLIENT_DIR, 'types.ts'), { force: true })
  await server.stop()
})

test('generated types type-check a small client', async () => {
  // openapi-typescript builds its output with the TypeScript 5 compiler API, which the
  // native TypeScript 7 package no longer exposes; hand it the TypeScript 5 copy.
  const typescript5 = require('typescript-5')
  mock.module('typescript', () => ({ default: typescript5, ...typescript5 }))
  const { default: openapiTS, astToString } = await import('openapi-typescript')
  const document = (await server.get('/openapi/json')).body
  const source = astToString(await openapiTS(document))
  expect(source).toContain('Inbox: {')
  expect(source).toContain('wait_seconds?: number')
  writeFileSync(join(CLIENT_DIR, 'types.ts'), source)

  const check = Bun.spawnSync(
    [
      join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
      '--noEmit',
      '--strict',
      '--target',
      'esnext',
      '--module',
      'esnext',
      '--moduleResolution',
      'bundler',
      '--allowImportingTsExtensions',
      '--lib',
      'esnext,dom',
      '--types',
      '',
      '--ignoreConfig',
      join(CLIENT_DIR, 'client.ts'),
    ],
    { cwd: ROOT },
  )
  expect(check.stdout.toString() + check.stderr.toString()).toBe('')
  expect(check.exitCode).toBe(0)
}, 60_000)
