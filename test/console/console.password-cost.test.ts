/**
 * CONSOLE_PASSWORD_MEMORY_KIB: the argon2id memory cost of passwords set from now on. Each
 * hash carries its own parameters, so passwords set under an earlier value keep signing in,
 * and are remade at the configured cost when they do.
 */
import { Database } from 'bun:sqlite'
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { startApp } from '../../src/app.ts'
import { ConfigError, loadConfig } from '../../src/config.ts'
import { hashPassword } from '../../src/core/users/users.ts'
import { createLogger } from '../../src/log.ts'
import { describeForBackends, startTestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setUp, signedIn } from '../support/console-client.ts'

const parametersOf = (hash: string) => /^\$argon2id\$v=19\$(m=\d+,t=\d+,p=\d+)\$/.exec(hash)?.[1]

function storedParameters(databasePath: string): Record<string, string | undefined> {
  const db = new Database(databasePath, { readonly: true })
  const rows = db.query('select email, password_hash from users').all() as { email: string; password_hash: string }[]
  db.close()
  return Object.fromEntries(rows.map((row) => [row.email, parametersOf(row.password_hash)]))
}

test("by default a password is hashed with Bun's own argon2id parameters (m=65536); the setting changes the memory cost", async () => {
  const bunDefault = parametersOf(await Bun.password.hash(PASSWORD, { algorithm: 'argon2id' }))
  expect(bunDefault).toBe('m=65536,t=2,p=1')
  expect(parametersOf(await hashPassword({ config: loadConfig({}) }, PASSWORD))).toBe(bunDefault)
  expect(
    parametersOf(await hashPassword({ config: loadConfig({ CONSOLE_PASSWORD_MEMORY_KIB: '1024' }) }, PASSWORD)),
  ).toBe('m=1024,t=2,p=1')
})

test("CONSOLE_PASSWORD_MEMORY_KIB accepts argon2's floor (8) up to 1 GiB, and refuses anything else by name", () => {
  expect(loadConfig({ CONSOLE_PASSWORD_MEMORY_KIB: '8' }).consolePasswordMemoryKib).toBe(8)
  expect(loadConfig({ CONSOLE_PASSWORD_MEMORY_KIB: '1048576' }).consolePasswordMemoryKib).toBe(1_048_576)
  for (const value of ['7', '1048577', '64MiB']) {
    expect(() => loadConfig({ CONSOLE_PASSWORD_MEMORY_KIB: value })).toThrow(ConfigError)
    expect(() => loadConfig({ CONSOLE_PASSWORD_MEMORY_KIB: value })).toThrow(/^CONSOLE_PASSWORD_MEMORY_KIB: /)
  }
})

test('every password hash in src is made by hashPassword, which reads the setting', async () => {
  const SRC = join(import.meta.dir, '..', '..', 'src')
  const hashing: string[] = []
  for await (const file of new Bun.Glob('**/*.{ts,tsx}').scan({ cwd: SRC })) {
    if ((await Bun.file(join(SRC, file)).text()).includes('password.hash(')) hashing.push(file)
  }
  expect(hashing).toEqual(['core/users/users.ts'])
})

describeForBackends(
  ['sqlite'],
  "it restarts a server with a new setting on the first one's SQLite file",
  'a password cost changed across a restart',
  () => {
    test('after the cost changes, a password set under the old one still signs in and is rehashed at the new cost; a changed password takes the new one', async () => {
      const first = await startTestServer({ env: { CONSOLE_PASSWORD_MEMORY_KIB: '16' } })
      try {
        await setUp(first, { email: 'op@example.com' })
        await first.app.stop()
        expect(storedParameters(first.databasePath)).toEqual({ 'op@example.com': 'm=16,t=2,p=1' })

        const config = loadConfig({
          PORT: '0',
          SMTP_PORT: '0',
          HOST: '127.0.0.1',
          DATABASE_PATH: first.databasePath,
          RECEIVING_DOMAIN: 'inbox.test',
          CONSOLE_PASSWORD_MEMORY_KIB: '32',
        })
        const again = await startApp({ config, logger: createLogger('silent') })
        try {
          const operator = await signedIn({ url: again.httpUrl }, 'op@example.com')
          // Signing in remade the hash at the new cost, so its check takes as long as the decoy's.
          expect(storedParameters(first.databasePath)).toEqual({ 'op@example.com': 'm=32,t=2,p=1' })
          expect((await signedIn({ url: again.httpUrl }, 'op@example.com')).hasSession()).toBe(true)
          await operator.get('/console/account')
          expect(
            (await operator.post('/console/account/password', { current: PASSWORD, password: 'new password 123' }))
              .status,
          ).toBe(303) // to the account page that says so (post/redirect/get)
          expect(storedParameters(first.databasePath)).toEqual({ 'op@example.com': 'm=32,t=2,p=1' })
          expect((await signedIn({ url: again.httpUrl }, 'op@example.com', 'new password 123')).hasSession()).toBe(true)
          // An unknown account is checked against a decoy made at the new cost: still a plain 401.
          const stranger = new ConsoleClient(again.httpUrl)
          await stranger.get('/console/sign-in')
          expect(
            (await stranger.post('/console/sign-in', { email: 'nobody@example.com', password: PASSWORD })).status,
          ).toBe(401)
        } finally {
          await again.stop()
        }
      } finally {
        await first.stop()
      }
    })
  },
)
