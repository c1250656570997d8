/**
 * A deploy under a waiting test: the example client's waitForMessage goes through a TCP
 * proxy (as Fly's stands in front), the server behind it stops (its waiting poll is closed
 * without an answer), and a new server starts on the same database. The wait asks again
 * within its own deadline and gets the message the new server received, instead of failing
 * the test with a connection error.
 */
import { expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { connect, createServer, type Socket } from 'node:net'
import { dirname } from 'node:path'
import { Pigeonhole } from '../../examples/pigeonhole.ts'
import { startApp } from '../../src/app.ts'
import { createLogger } from '../../src/log.ts'
import { startTestServer } from '../support/harness.ts'
import { until } from '../support/wait.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

/** A TCP proxy on port 0 to whichever HTTP port `target` names now; a closed or refused upstream closes the client's side. */
function switchableProxy(target: () => number) {
  const server = createServer((client: Socket) => {
    const upstream = connect(target(), '127.0.0.1')
    client.pipe(upstream)
    upstream.pipe(client)
    upstream.on('error', () => client.destroy())
    upstream.on('close', () => client.destroy())
    client.on('error', () => upstream.destroy())
    client.on('close', () => upstream.destroy())
  })
  return new Promise<{ port: number; close: () => void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ port: (server.address() as { port: number }).port, close: () => server.close() }),
    ),
  )
}

test('waitForMessage survives a server stop: it asks again and gets the mail the next server received', async () => {
  const first = await startTestServer()
  const tenant = await first.tenant()
  let httpPort = first.app.httpPort
  const proxy = await switchableProxy(() => httpPort)
  const pigeonhole = new Pigeonhole({ url: `http://127.0.0.1:${proxy.port}`, key: tenant.key })
  const inbox = await pigeonhole.createInbox()

  const waiting = pigeonhole.waitForMessage(inbox, { subject: 'After the deploy', timeout: 20_000 }).then(
    (message) => ({ subject: message.subject }),
    (error: Error) => ({ failed: error.message }),
  )
  await until(() => first.app.services.longPolls.total() === 1, 'the wait to reach the first server')
  await first.app.stop() // the wait's connection is closed without an answer
  // A deploy takes a while: meanwhile the proxy finds nothing to connect to, and every
  // attempt (fetch's own retry included) is closed at once. The sleep is the scenario, not a wait.
  await Bun.sleep(1_000)

  // The next server, on the same file, as after a deploy.
  const second = await startApp({ config: first.config, logger: createLogger('silent') })
  try {
    httpPort = second.httpPort
    const sent = await sendMail(
      second.smtpPort,
      { to: [inbox.address] },
      simpleMessage({ to: inbox.address, subject: 'After the deploy' }),
    )
    expect(sent.data?.code).toBe(250)
    expect(await waiting).toEqual({ subject: 'After the deploy' })
  } finally {
    proxy.close()
    await second.stop()
    rmSync(dirname(first.databasePath), { recursive: true, force: true })
  }
}, 30_000)
