/**
 * Untrusted stored bytes as a download: the API's attachment route and the console's
 * attachment and `.eml` downloads answer with exactly these headers, so both serve the
 * same bytes the same way (never sniffed, never rendered as a page of our origin).
 */
import type { DownloadSlots } from '../core/attachments/download-slots.ts'

/** `attachment; filename="ascii"; filename*=UTF-8''percent-encoded` (RFC 6266), safe for any name. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\%;]/g, '_').trim() || 'attachment'
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`
}

/** The size of each piece a download with `sent` hands to its connection. */
const PIECE_BYTES = 256 * 1024

/**
 * Hands `content` over in pieces as the connection takes them, and calls `sent` once after
 * the last piece (or when the client leaves): the download's slot is held for the transfer.
 */
function sentInPieces(content: Buffer, sent: () => void): ReadableStream<Uint8Array> {
  let offset = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= content.byteLength) {
        controller.close()
        sent()
        return
      }
      controller.enqueue(content.subarray(offset, offset + PIECE_BYTES))
      offset += PIECE_BYTES
    },
    cancel: sent,
  })
}

/** A file read for download: what `downloadResponse` sends. */
export interface DownloadFile {
  content: Buffer
  contentType: string
  filename: string
}

/**
 * A download that holds its organisation's slot (core/attachments/download-slots.ts) from
 * before its read until its last byte is handed to the connection or the client leaves, and
 * reads in the machine's turn of reads. The API's attachment route and the console's
 * attachment and `.eml` downloads share one limiter this way, so a browser tab cannot add
 * what the organisation's keys are refused. The API answers 429 at once when the slots are
 * taken; the console waits its turn (`waitForSlotMs`: a browser does not retry an image).
 */
export async function heldDownload(
  slots: DownloadSlots,
  organizationId: string,
  read: () => Promise<DownloadFile>,
  options: { waitForSlotMs?: number } = {},
): Promise<Response> {
  const release = options.waitForSlotMs
    ? await slots.acquireInTurn(organizationId, options.waitForSlotMs)
    : slots.acquire(organizationId)
  try {
    const file = await slots.reading(read)
    return downloadResponse(file.content, file.contentType, file.filename, release)
  } catch (error) {
    release()
    throw error
  }
}

/** `sent`, when given, hears when the last byte was handed over or the client left. */
function downloadResponse(content: Buffer, contentType: string, filename: string, sent?: () => void): Response {
  // The cast only satisfies the DOM typing that preact's JSX types bring in; Bun sends a Buffer as is.
  return new Response(sent ? sentInPieces(content, sent) : (content as Uint8Array<ArrayBuffer>), {
    headers: {
      'content-type': contentType,
      'content-disposition': contentDisposition(filename),
      'cache-control': 'private, no-store',
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; sandbox",
      ...(sent ? { 'content-length': String(content.byteLength) } : {}),
    },
  })
}
