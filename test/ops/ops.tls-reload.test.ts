/** STARTTLS with the operator's certificate files: served, and replaced without a restart. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { X509Certificate } from 'node:crypto'
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generate } from 'selfsigned'
import { ConfigError, loadConfig } from '../../src/config.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { startTls } from '../support/starttls-client.ts'
import { until } from '../support/wait.ts'

const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-tls-'))
const certFile = join(dir, 'cert.pem')
const keyFile = join(dir, 'key.pem')
let server: TestServer

const certificate = (name: string) =>
  generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }],
  })

async function install(name: string, mtime: number): Promise<void> {
  const pems = await certificate(name)
  writeFileSync(keyFile, pems.private)
  writeFileSync(certFile, pems.cert)
  // Distinct modification times, whatever the file system's timestamp granularity.
  for (const file of [keyFile, certFile]) utimesSync(file, mtime, mtime)
}

/** The name on the certificate a new STARTTLS session is offered. */
async function servedName(): Promise<string> {
  const { tls } = await startTls(server.app.smtpPort)
  const name = new X509Certificate(tls.getPeerX509Certificate()!.raw).subject
  tls.destroy()
  return name.replace(/^CN=/, '')
}

beforeAll(async () => {
  await install('first.inbox.test', 1_000_000)
  server = await startTestServer({ env: { SMTP_TLS_CERT_FILE: certFile, SMTP_TLS_KEY_FILE: keyFile } })
})
afterAll(async () => {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('SMTP_TLS_CERT_FILE and SMTP_TLS_KEY_FILE', () => {
  test('the operator certificate is served instead of a self-signed one', async () => {
    expect(await servedName()).toBe('first.inbox.test')
    expect(server.logs.find((line) => line.event === 'smtp_tls_ready')?.source).toBe('files')
  })

  test('SIGHUP re-reads the files; the next session gets the new certificate', async () => {
    await install('second.inbox.test', 2_000_000)
    process.kill(process.pid, 'SIGHUP')
    await until(() => server.logs.some((line) => line.event === 'smtp_tls_reloaded'), 'the reload to be logged')
    expect(await servedName()).toBe('second.inbox.test')
  })

  test('a changed file is picked up without a signal', async () => {
    await install('third.inbox.test', 3_000_000)
    await until(async () => (await servedName()) === 'third.inbox.test', 'the new certificate to be served', {
      intervalMs: 100,
    })
  })

  test('a key that does not match the certificate is refused and the old pair kept', async () => {
    const other = await certificate('mismatch.inbox.test')
    writeFileSync(certFile, other.cert) // the key stays that of third.inbox.test
    utimesSync(certFile, 4_000_000, 4_000_000)
    process.kill(process.pid, 'SIGHUP')
    await until(
      () => server.logs.some((line) => line.event === 'smtp_tls_reload_failed'),
      'the refused reload to be logged',
    )
    expect(await servedName()).toBe('third.inbox.test')
  })
})

test('a certificate file without its key (or the reverse) is a configuration error', () => {
  expect(() => loadConfig({ SMTP_TLS_CERT_FILE: certFile })).toThrow(ConfigError)
  expect(() => loadConfig({ SMTP_TLS_KEY_FILE: keyFile })).toThrow('SMTP_TLS_CERT_FILE')
})
