/**
 * Memory and start-up on a fresh Pigeonhole: idle RSS; RSS with P long polls open (spread
 * over organisations and keys so the shipped per-key and per-org long-poll limits hold);
 * RSS after N stored 30 KB messages; then start-up time on that filled database.
 */
import { createConnection, type Socket } from 'node:net'
import { systemClock } from '../../src/clock.ts'
import { createApiKey } from '../../src/core/api-keys/keys.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { openStorage } from '../../src/storage/database.ts'
import { createSqliteStore } from '../../src/storage/sqlite/store.ts'
import type { Shape } from '../lib/messages.ts'
import { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { settledRss, spawnChild, waitQuiet } from '../lib/proc.ts'
import { median, sleep } from '../lib/stats.ts'
import { ROOT, SERVER_ENTRY, startPigeonhole } from '../lib/targets.ts'
import { fill } from './ingest.ts'

export interface MemoryResult {
  idleRssMiB: number
  messages: number
  afterMessagesRssMiB: number
  longPolls: number
  withLongPollsRssMiB: number
  longPollsAddMiB: number
  startupRuns: number[]
  startupMs: number
  /** The same three moments split into anonymous and file-backed pages. */
  parts: Record<'idle' | 'afterMessages' | 'withLongPolls', Awaited<ReturnType<typeof settledRss>>>
}

const INBOXES = 10
/** Default LIMIT_LONG_POLLS_PER_KEY is 10 and _PER_ORG 30: 2 keys of 10 polls per organisation stays within both. */
const POLLS_PER_KEY = 10
const KEYS_PER_ORG = 2

/** Opens one raw HTTP/1.1 long poll; Bun's fetch would queue past its 256-connection pool. */
function openLongPoll(port: number, path: string, key: string, onAnswer: (head: string) => void): Socket {
  const socket = createConnection({ port, host: '127.0.0.1' })
  socket.setEncoding('latin1')
  socket.on('connect', () =>
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`),
  )
  socket.once('data', (chunk: string) => onAnswer(chunk.slice(0, 200)))
  socket.on('error', () => {})
  return socket
}

async function openManyPolls(
  base: string,
  databasePath: string,
  count: number,
): Promise<{ sockets: Socket[]; answered: string[] }> {
  const port = Number(new URL(base).port)
  // Bulk tenants through the same functions the CLI calls (one CLI process per key would take seconds).
  const storage = openStorage(databasePath)
  const keys: string[] = []
  const orgs = Math.ceil(count / (POLLS_PER_KEY * KEYS_PER_ORG))
  for (let o = 0; o < orgs; o++) {
    const cli = { storage, store: createSqliteStore(storage), clock: systemClock }
    const org = await createOrganization(cli, CLI_ACTOR, { name: `bench-polls-${o}`, preset: 'hosted' })
    for (let k = 0; k < KEYS_PER_ORG; k++)
      keys.push((await createApiKey(cli, CLI_ACTOR, { organizationId: org.id })).key)
  }
  storage.close()
  const sockets: Socket[] = []
  const answered: string[] = []
  for (let k = 0; k < keys.length && sockets.length < count; k += KEYS_PER_ORG) {
    const inbox = await new PigeonholeApi(base, keys[k]!).createInbox()
    for (let j = 0; j < KEYS_PER_ORG * POLLS_PER_KEY && sockets.length < count; j++) {
      const key = keys[k + Math.floor(j / POLLS_PER_KEY)]!
      sockets.push(
        openLongPoll(port, `/v1/inboxes/${inbox.id}/messages?wait_seconds=120`, key, (head) => answered.push(head)),
      )
    }
  }
  return { sockets, answered }
}

export async function memoryPhase(
  shape: Shape,
  options: { messages: number; longPolls: number; startupRuns: number },
): Promise<MemoryResult> {
  const server = await startPigeonhole()
  const pid = server.child.pid
  await sleep(1000)
  const idle = await settledRss(pid)

  // Long polls on the idle server: what they add is not hidden by garbage from ingest.
  const { sockets, answered } = await openManyPolls(server.base, server.databasePath, options.longPolls)
  await sleep(1000)
  const withLongPolls = await settledRss(pid)
  if (answered.length > 0)
    throw new Error(`memory: ${answered.length} long polls answered early, first: ${answered[0]}`)
  for (const socket of sockets) socket.destroy()

  const api = new PigeonholeApi(server.base, server.key)
  const inboxes = await Promise.all(Array.from({ length: INBOXES }, () => api.createInbox()))
  const sent = await fill(
    server.smtpPort,
    shape,
    inboxes.map((inbox) => inbox.address),
    options.messages,
  )
  let stored = 0
  for (const inbox of inboxes) stored += await api.countMessages(inbox.id)
  if (stored !== options.messages || sent !== options.messages)
    throw new Error(`memory: sent ${sent}, stored ${stored}, expected ${options.messages}`)
  await waitQuiet(pid)
  const afterMessages = await settledRss(pid)
  await server.child.stop()

  const startupRuns: number[] = []
  for (let i = 0; i < options.startupRuns; i++) startupRuns.push(await timeStartup(server.env))
  await server.stop()
  return {
    idleRssMiB: idle.rssMiB,
    messages: stored,
    afterMessagesRssMiB: afterMessages.rssMiB,
    longPolls: sockets.length,
    withLongPollsRssMiB: withLongPolls.rssMiB,
    longPollsAddMiB: withLongPolls.rssMiB - idle.rssMiB,
    startupRuns,
    startupMs: median(startupRuns),
    parts: { idle, afterMessages, withLongPolls },
  }
}

/** From just before the process is spawned to the first 200 from /health. */
export async function timeStartup(env: Record<string, string>): Promise<number> {
  const url = `http://127.0.0.1:${env.PORT}/health`
  const started = performance.now()
  const child = spawnChild('pigeonhole-startup', [process.execPath, SERVER_ENTRY], env, ROOT)
  try {
    for (;;) {
      if (child.proc.exitCode !== null) throw new Error(`start-up: exited with ${child.proc.exitCode}`)
      try {
        const response = await fetch(url)
        await response.arrayBuffer()
        if (response.status === 200) return performance.now() - started
      } catch {
        await sleep(1) // not listening yet
      }
    }
  } finally {
    await child.stop()
  }
}
