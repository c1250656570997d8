/**
 * The entry's choices made from the environment: no replica runs the server alone; a bad
 * replica setting stops it with one line naming the variable; the s3 replica reaches the
 * bucket and endpoint Fly's Tigris variables name (a local fake stands in for Tigris),
 * and a restore that fails keeps the server from starting on an empty database.
 */
import { afterAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { makeDeployment, ROOT, startEntry, stopped } from '../support/entry-process.ts'

// One folder per test: a database left by one test would change what the next one does.
const deployments: ReturnType<typeof makeDeployment>[] = []
const fresh = (env: Record<string, string> = {}) => {
  const deployment = makeDeployment(env)
  deployments.push(deployment)
  return deployment
}
afterAll(() => {
  for (const d of deployments) d.cleanup()
})

async function runEntry(deployment: ReturnType<typeof makeDeployment>, env: Record<string, string>) {
  const child = Bun.spawn([process.execPath, 'src/entry.ts'], {
    cwd: ROOT,
    env: { ...deployment.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, output: stdout + stderr }
}

test('LITESTREAM_REPLICA=none runs the server without litestream', async () => {
  const deployment = fresh({ LITESTREAM_REPLICA: 'none' })
  const entry = await startEntry(deployment)
  expect(await stopped(entry)).toBe(0)
  expect(entry.output()).not.toContain('litestream')
  expect(existsSync(deployment.replicaPath)).toBe(false)
})

test('a file replica without a path stops the entry with exit 78 naming the variable', async () => {
  const { code, output } = await runEntry(fresh(), { LITESTREAM_REPLICA: 'file', LITESTREAM_REPLICA_PATH: '' })
  expect(code).toBe(78)
  expect(output).toContain('LITESTREAM_REPLICA_PATH')
})

test('an s3 replica without BUCKET_NAME stops the entry with exit 78 naming the variable', async () => {
  const { code, output } = await runEntry(fresh(), { LITESTREAM_REPLICA: 's3' })
  expect(code).toBe(78)
  expect(output).toContain('BUCKET_NAME')
})

test('the s3 replica uses BUCKET_NAME, AWS_ENDPOINT_URL_S3, AWS_REGION and the keys; a failed restore stops the start', async () => {
  const requests: { method: string; path: string; query: URLSearchParams; authorization: string }[] = []
  const tigris = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const url = new URL(request.url)
      requests.push({
        method: request.method,
        path: url.pathname,
        query: url.searchParams,
        authorization: request.headers.get('authorization') ?? '',
      })
      // Refused without a retry, so litestream gives up at once.
      return new Response(
        '<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>',
        { status: 403, headers: { 'content-type': 'application/xml' } },
      )
    },
  })
  const deployment = fresh()
  try {
    const { code, output } = await runEntry(deployment, {
      LITESTREAM_REPLICA: 's3',
      LITESTREAM_REPLICA_PATH: '', // the default prefix
      BUCKET_NAME: 'pigeonhole-backups',
      AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${tigris.port}`,
      AWS_REGION: 'auto',
      AWS_ACCESS_KEY_ID: 'tid_test_access_key',
      AWS_SECRET_ACCESS_KEY: 'tsec_test_secret',
    })
    expect(code).toBe(1)
    expect(output).toContain('litestream restore failed')
    expect(existsSync(deployment.databasePath)).toBe(false) // the server never opened it
    expect(requests.length).toBeGreaterThan(0)
    const [first] = requests
    expect(first!.method).toBe('GET')
    expect(first!.path).toBe('/pigeonhole-backups') // path-style, as Tigris accepts
    expect(first!.query.get('prefix')).toBe('pigeonhole/generations/') // the default key prefix
    expect(first!.authorization).toContain('Credential=tid_test_access_key/')
    expect(first!.authorization).toContain('/auto/s3/aws4_request')
  } finally {
    tigris.stop(true)
  }
})
