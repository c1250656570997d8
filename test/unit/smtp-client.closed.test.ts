/**
 * The tests' SMTP client and its retrying sender against scripted servers: a connection that
 * closes before a reply fails the wait at once, naming what it waited for, and the sender
 * retries exactly the failures that leave a message unaccepted.
 */
import { afterEach, expect, test } from 'bun:test'
import { SendFailedError, sendRetrying } from '../support/retrying-sender.ts'
import { SmtpClient, SmtpConnectionClosedError } from '../support/smtp.ts'

const stops: Array<() => void> = []
afterEach(() => {
  while (stops.length > 0) stops.pop()!()
})

/**
 * A server that plays `scripts[n]` for its n-th connection (the last one for any after). A
 * script answers each command's verb (or '.', the end of a message): a string is sent as the
 * reply, 'close' ends the connection, 'silence' answers nothing; `greeting` likewise on connect.
 */
type Script = { greeting: string; on: (line: string) => string }
function scriptedServer(scripts: Script[]) {
  let connections = 0
  const listener = Bun.listen<{ script: Script; buffer: string; inData: boolean }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        const script = scripts[Math.min(connections++, scripts.length - 1)]!
        socket.data = { script, buffer: '', inData: false }
        if (script.greeting === 'close') socket.end()
        else if (script.greeting !== 'silence') socket.write(`${script.greeting}\r\n`)
      },
      data(socket, chunk) {
        const state = socket.data
        state.buffer += Buffer.from(chunk).toString('latin1')
        for (let at = state.buffer.indexOf('\r\n'); at >= 0; at = state.buffer.indexOf('\r\n')) {
          const line = state.buffer.slice(0, at)
          state.buffer = state.buffer.slice(at + 2)
          if (state.inData && line !== '.') continue
          const answer = state.script.on(state.inData ? '.' : line.split(' ')[0]!.toUpperCase())
          state.inData = !state.inData && answer.startsWith('354')
          if (answer === 'close') socket.end()
          else if (answer !== 'silence') socket.write(`${answer}\r\n`)
        }
      },
    },
  })
  stops.push(() => listener.stop(true))
  return { port: listener.port, connections: () => connections }
}

/** An ordinary server, with `change` replacing the answer to some commands. */
function answering(change: Record<string, string> = {}): Script {
  const normal: Record<string, string> = {
    EHLO: '250 ok',
    MAIL: '250 ok',
    RCPT: '250 ok',
    DATA: '354 go on',
    '.': '250 Message stored',
    QUIT: '221 bye',
  }
  return {
    greeting: change.greeting ?? '220 scripted ESMTP',
    on: (command) => change[command] ?? normal[command] ?? '500 unknown',
  }
}

/** The message a promise rejects with. */
const failure = (work: Promise<unknown>) =>
  work.then(
    () => 'resolved',
    (error: unknown) => (error instanceof SmtpConnectionClosedError ? error.message : `unexpected ${String(error)}`),
  )

const message = 'Subject: hello\r\n\r\nbody\r\n'

test('a connection closed before the greeting fails connect at once, naming the greeting', async () => {
  const server = scriptedServer([answering({ greeting: 'close' })])
  expect(await failure(SmtpClient.connect(server.port))).toBe('SMTP connection closed before the greeting')
})

test('a connection closed before a reply fails the command waiting for it, and every later one', async () => {
  const server = scriptedServer([answering({ MAIL: 'close' })])
  const client = await SmtpClient.connect(server.port)
  expect((await client.command('EHLO test')).code).toBe(250)
  expect(await failure(client.command('MAIL FROM:<a@example.com>'))).toBe(
    'SMTP connection closed before the reply to MAIL',
  )
  expect(await failure(client.command('RSET'))).toBe('SMTP connection closed before the reply to RSET')
  await client.quit() // resolves: nothing left to wait for
})

test('replies that arrived before the close are still handed out', async () => {
  const server = scriptedServer([answering({ EHLO: '421 closing', MAIL: 'close' })])
  const client = await SmtpClient.connect(server.port)
  client.socket.write('EHLO test\r\nMAIL FROM:<a@example.com>\r\n')
  await client.closed()
  expect(await client.next()).toEqual({ code: 421, text: 'closing' })
  expect(await failure(client.next('the reply to MAIL'))).toBe('SMTP connection closed before the reply to MAIL')
})

test('the sender retries a connection closed before the greeting, and after the final dot', async () => {
  const server = scriptedServer([answering({ greeting: 'close' }), answering({ '.': 'close' }), answering()])
  const sent = await sendRetrying(server.port, { to: 'x@example.com' }, message, { pauseMs: 0 })
  expect(sent.reply).toEqual({ code: 250, text: 'Message stored' })
  expect(sent.retried).toEqual([
    'SMTP connection closed before the greeting (attempt 1)',
    'SMTP connection closed before the reply to the message (after the final dot) (attempt 2)',
  ])
  expect(server.connections()).toBe(3)
})

test('onlyClosedBeforeGreeting: a close before the greeting is retried; a 421, or a close after it, fails at once', async () => {
  const retried = scriptedServer([answering({ greeting: 'close' }), answering()])
  const sent = await sendRetrying(retried.port, { to: 'x@example.com' }, message, {
    pauseMs: 0,
    onlyClosedBeforeGreeting: true,
  })
  expect(sent.retried).toEqual(['SMTP connection closed before the greeting (attempt 1)'])
  for (const [change, expected] of [
    [{ greeting: '421 stopping' }, 'attempt 1: the greeting answered 421 stopping'],
    [{ MAIL: 'close' }, 'attempt 1: SMTP connection closed before the reply to MAIL'],
    [{ '.': 'close' }, 'attempt 1: SMTP connection closed before the reply to the message (after the final dot)'],
  ] as const) {
    const server = scriptedServer([answering(change), answering()])
    const error = await sendRetrying(server.port, { to: 'x@example.com' }, message, {
      pauseMs: 0,
      onlyClosedBeforeGreeting: true,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SendFailedError)
    expect((error as Error).message).toBe(expected)
    expect(server.connections()).toBe(1)
  }
})

test('the sender retries 421 and 451 at any step', async () => {
  const server = scriptedServer([
    answering({ greeting: '421 stopping' }),
    answering({ RCPT: '451 Try again later' }),
    answering({ '.': '421 Server shutting down' }),
    answering(),
  ])
  const sent = await sendRetrying(server.port, { to: 'x@example.com' }, message, { pauseMs: 0 })
  expect(sent.reply.code).toBe(250)
  expect(sent.retried).toEqual([
    'the greeting answered 421 stopping (attempt 1)',
    'RCPT answered 451 Try again later (attempt 2)',
    'the message answered 421 Server shutting down (attempt 3)',
  ])
})

test('the sender never retries a permanent refusal, another 4xx or an unexpected reply', async () => {
  for (const [change, expected] of [
    [{ RCPT: '550 Recipient address rejected' }, 'RCPT answered 550 Recipient address rejected'],
    [{ RCPT: '452 Monthly recipient quota exceeded' }, 'RCPT answered 452 Monthly recipient quota exceeded'],
    [{ '.': '554 Transaction failed' }, 'the message answered 554 Transaction failed'],
    [{ DATA: '250 ok' }, 'DATA answered 250 ok'],
  ] as const) {
    const server = scriptedServer([answering(change), answering()])
    const error = await sendRetrying(server.port, { to: 'x@example.com' }, message, { pauseMs: 0 }).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(SendFailedError)
    expect((error as Error).message).toBe(expected)
    expect(server.connections()).toBe(1)
  }
})

test('a server that stops answering fails the send at the attempt bound, naming the step; it is not retried', async () => {
  const server = scriptedServer([answering({ MAIL: 'silence' }), answering()])
  const error = await sendRetrying(server.port, { to: 'x@example.com' }, message, {
    attemptTimeoutMs: 300,
    pauseMs: 0,
  }).catch((e: unknown) => e)
  expect(error).toBeInstanceOf(SendFailedError)
  expect((error as Error).message).toBe('no answer within 300 ms while waiting for the reply to MAIL')
  expect(server.connections()).toBe(1)
})

test('a greeting that never comes is bounded too', async () => {
  const server = scriptedServer([{ greeting: 'silence', on: () => 'silence' }])
  const error = await sendRetrying(server.port, { to: 'x@example.com' }, message, {
    attemptTimeoutMs: 300,
    pauseMs: 0,
  }).catch((e: unknown) => e)
  expect((error as Error).message).toBe('no answer within 300 ms while waiting for the greeting')
})

test('the sender gives up after its attempts, listing every failure', async () => {
  const server = scriptedServer([answering({ greeting: 'close' })])
  const error = await sendRetrying(server.port, { to: 'x@example.com' }, message, { attempts: 3, pauseMs: 0 }).catch(
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(SendFailedError)
  expect((error as Error).message).toBe(
    'no attempt of 3 was accepted: SMTP connection closed before the greeting (attempt 1); SMTP connection closed before the greeting (attempt 2); SMTP connection closed before the greeting (attempt 3)',
  )
  expect(server.connections()).toBe(3)
})
