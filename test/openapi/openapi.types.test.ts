/**
 * openapi-typescript turns the served document into TypeScript types, and a small client
 * (client/client.ts), docs/api.md's openapi-fetch snippet and what that snippet's text says
 * of openapi-fetch (client/openapi-fetch.ts) type-check against them with the project's
 * compiler.
 */
import { afterAll, beforeAll, expect, mock, test } from 'bun:test'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'

const ROOT = join(import.meta.dir, '..', '..')
const CLIENT_DIR = join(import.meta.dir, 'client')
/** Written by this test, ignored by git: the generated types (under two names: the client's and the one the docs' snippet imports) and that snippet. */
const GENERATED = ['types.ts', 'pigeonhole-api.ts', 'docs-snippet.ts']
let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(async () => {
  for (const file of GENERATED) rmSync(join(CLIENT_DIR, file), { force: true })
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
  writeFileSync(join(CLIENT_DIR, 'pigeonhole-api.ts'), source)
  // The snippet exactly as docs/api.md shows it.
  const docs = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8')
  const snippet = /<!-- typechecked: test\/openapi\/openapi\.types\.test\.ts -->\n```ts\n([\s\S]*?)```\n/.exec(docs)
  expect(snippet).not.toBeNull()
  writeFileSync(join(CLIENT_DIR, 'docs-snippet.ts'), snippet![1]!)

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
      'node', // the docs' snippet reads process.env
      // As the project's own tsconfig: the declaration files of lib.dom and @types/node are
      // the libraries' to check, and checking them was four fifths of this compile's CPU.
      '--skipLibCheck',
      '--ignoreConfig',
      join(CLIENT_DIR, 'client.ts'),
      join(CLIENT_DIR, 'openapi-fetch.ts'),
      join(CLIENT_DIR, 'docs-snippet.ts'),
    ],
    { cwd: ROOT },
  )
  expect(check.stdout.toString() + check.stderr.toString()).toBe('')
  expect(check.exitCode).toBe(0)
}, 60_000)
