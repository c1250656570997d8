/**
 * SMTP ingest: accepted messages per second from 8 concurrent connections for one
 * target and shape, then server CPU per message (from /proc, until the target is quiet,
 * so work done after the 250, as maildev does, is counted) and a storage check.
 */
import { headersFor, type Shape } from '../lib/messages.ts'
import { cpuMs, waitQuiet } from '../lib/proc.ts'
import { SmtpClient } from '../lib/smtp-client.ts'

export const CONNECTIONS = 8

export interface IngestTarget {
  name: string
  pid: number
  smtpPort: number
  /** Makes a place for this round's messages; returns the recipient and how to count what got stored. */
  prepare(): Promise<{ to: string; stored: () => Promise<number> }>
}

export interface IngestRound {
  target: string
  shape: string
  accepted: number
  rejected: number
  stored: number
  verified: boolean
  seconds: number
  perSecond: number
  cpuMsPerMessage: number
  /** The part of it spent on the main thread (the event loop). */
  mainThreadCpuMsPerMessage: number
}

/** Sends for `durationMs` (or until `maxMessages`), over CONNECTIONS connections opened beforehand. */
export async function ingestRound(
  target: IngestTarget,
  shape: Shape,
  durationMs: number,
  maxMessages = Infinity,
): Promise<IngestRound> {
  const { to, stored } = await target.prepare()
  const clients = await Promise.all(Array.from({ length: CONNECTIONS }, () => SmtpClient.connect(target.smtpPort)))
  let accepted = 0
  let rejected = 0
  let started = 0
  let lastReply = 0
  let firstError = ''
  const cpuBefore = cpuMs(target.pid)
  const mainBefore = cpuMs(target.pid, true)
  started = performance.now()
  const deadline = started + durationMs
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < deadline && accepted + rejected < maxMessages) {
        const reply = await client.send('sender@bench.example', to, headersFor(shape, to), shape.body)
        if (reply.code === 250) {
          accepted++
          lastReply = Math.max(lastReply, reply.at)
        } else {
          rejected++
          firstError ||= `${reply.code} ${reply.text}`
        }
      }
    }),
  )
  await waitQuiet(target.pid)
  const cpuAfter = cpuMs(target.pid)
  const mainAfter = cpuMs(target.pid, true)
  for (const client of clients) client.close()
  if (firstError) console.error(`  ${target.name}: ${rejected} rejected, first: ${firstError}`)
  const seconds = (lastReply - started) / 1000
  const count = await stored()
  return {
    target: target.name,
    shape: shape.name,
    accepted,
    rejected,
    stored: count,
    verified: count === accepted && rejected === 0,
    seconds,
    perSecond: accepted / seconds,
    cpuMsPerMessage: (cpuAfter - cpuBefore) / accepted,
    mainThreadCpuMsPerMessage: (mainAfter - mainBefore) / accepted,
  }
}

/** Sends exactly `total` messages spread over `recipients`, 8 connections, no timing; for filling a database. */
export async function fill(smtpPort: number, shape: Shape, recipients: string[], total: number): Promise<number> {
  const clients = await Promise.all(Array.from({ length: CONNECTIONS }, () => SmtpClient.connect(smtpPort)))
  let next = 0
  let accepted = 0
  await Promise.all(
    clients.map(async (client) => {
      while (next < total) {
        const to = recipients[next++ % recipients.length]!
        const reply = await client.send('sender@bench.example', to, headersFor(shape, to), shape.body)
        if (reply.code === 250) accepted++
        else throw new Error(`fill: ${reply.code} ${reply.text}`)
      }
    }),
  )
  for (const client of clients) client.close()
  return accepted
}
