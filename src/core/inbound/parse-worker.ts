/**
 * A parse worker: runs parseMail (postal-mime and our derivation) off the main thread, so
 * a heavy message costs this thread's time, never the event loop's. The raw bytes arrive
 * transferred and go back transferred with the result; attachment bytes are transferred
 * too. Started by ParsePool (parse-pool.ts); `bun run build` bundles it as its own file.
 */
import type { Limits } from '../../config.ts'
import { parseMail, type ParsedMail } from './parse.ts'
import { InboundRefusal, type RefusalReason } from './refusal.ts'
import { scanStructure } from './structure.ts'

export interface ParseRequest {
  id: number
  raw: ArrayBuffer
  envelopeFrom: string
  limits: Limits
}

export type ParseReply =
  | { ready: true }
  | { id: number; ok: true; mail: ParsedMail; raw: ArrayBuffer }
  | { id: number; ok: false; refusal: { reason: RefusalReason; detail: string } }
  | { id: number; ok: false; error: string }

/** The bytes as a view that owns its whole ArrayBuffer (copied only if shared), listed for transfer. */
function movable(bytes: Uint8Array, transfer: ArrayBuffer[]): Uint8Array {
  const owns =
    bytes.byteOffset === 0 &&
    bytes.byteLength === bytes.buffer.byteLength &&
    !transfer.includes(bytes.buffer as ArrayBuffer)
  const own = owns ? bytes : new Uint8Array(bytes)
  transfer.push(own.buffer as ArrayBuffer)
  return own
}

declare const self: Worker

/**
 * A big message leaves tens of MiB of parser garbage that an idle worker would hold until
 * its next allocation; a full collection after each big one gives most of it back (figures
 * in bench/README.md). Small messages leave little, and a collection per message would
 * cost throughput, so they skip it.
 */
const COLLECT_AFTER_BYTES = 512 * 1024

self.onmessage = async ({ data }: MessageEvent<ParseRequest>) => {
  const size = data.raw.byteLength
  const reply = (message: ParseReply, transfer: ArrayBuffer[] = []) => self.postMessage(message, transfer)
  try {
    const raw = Buffer.from(data.raw)
    // The structure's limits first (core/inbound/structure.ts): receive.ts leaves a message
    // too big for the event loop's parser to be scanned here, off the event loop.
    const { refusal } = scanStructure(raw, data.limits)
    if (refusal) throw refusal
    const mail = await parseMail(raw, data.envelopeFrom, data.limits)
    const transfer: ArrayBuffer[] = [data.raw]
    const attachments = mail.attachments.map((attachment) => ({
      ...attachment,
      content: movable(attachment.content, transfer) as Buffer,
    }))
    reply({ id: data.id, ok: true, mail: { ...mail, attachments }, raw: data.raw }, transfer)
  } catch (error) {
    if (error instanceof InboundRefusal)
      reply({ id: data.id, ok: false, refusal: { reason: error.reason, detail: error.detail } })
    else reply({ id: data.id, ok: false, error: error instanceof Error ? error.message.slice(0, 200) : 'parse failed' })
  }
  if (size >= COLLECT_AFTER_BYTES)
    Bun.gc(true) // after the reply, so the sender does not wait for it
  else collectWhenIdle()
}

/**
 * Small messages leave garbage too, a little each: a worker that goes quiet after a busy
 * spell would hold it until its next allocation. One full collection once nothing has
 * arrived for a second returns it, at no cost to a worker that stays busy.
 */
const IDLE_COLLECTION_AFTER_MS = 1000
let idleCollection: ReturnType<typeof setTimeout> | undefined
function collectWhenIdle(): void {
  clearTimeout(idleCollection)
  idleCollection = setTimeout(() => Bun.gc(true), IDLE_COLLECTION_AFTER_MS)
}

// Module loading takes tens of milliseconds; the pool starts a job's clock only after this.
self.postMessage({ ready: true } satisfies ParseReply)
