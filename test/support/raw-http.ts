/**
 * Sends exact bytes over TCP and returns what the server wrote back. fetch() normalises
 * paths, headers and bodies; hostile-input tests need to send what fetch would not.
 */
export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
  raw: string
}

export async function rawHttp(port: number, request: string | Uint8Array): Promise<RawResponse> {
  const chunks: Uint8Array[] = []
  await new Promise<void>((resolve, reject) => {
    Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        open(socket) {
          socket.write(request)
        },
        data(_socket, data) {
          chunks.push(new Uint8Array(data))
        },
        close() {
          resolve()
        },
        error(_socket, error) {
          reject(error)
        },
      },
    }).catch(reject)
  })
  const raw = Buffer.concat(chunks).toString('latin1')
  const [head = '', ...rest] = raw.split('\r\n\r\n')
  const [statusLine = '', ...headerLines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of headerLines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n'), raw }
}

/** One request with `Connection: close`, so the server ends the exchange after answering. */
export const rawRequest = (method: string, target: string, headers: Record<string, string> = {}, body = ''): string =>
  [
    `${method} ${target} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ...(body ? [`Content-Length: ${Buffer.byteLength(body)}`] : []),
    '',
    body,
  ].join('\r\n')

/**
 * Sends `head` (request line and headers, ending in the blank line), then `body` one byte
 * every `everyMs`: a slow client. `done` resolves when the server closes the connection.
 */
export function trickleRequest(
  port: number,
  head: string,
  body: string,
  everyMs: number,
): { done: Promise<void>; text: () => string } {
  const received: string[] = []
  let closed = false
  let timer: ReturnType<typeof setInterval> | undefined
  const done = new Promise<void>((resolve) => {
    const finish = () => {
      closed = true
      clearInterval(timer)
      resolve()
    }
    Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        open(socket) {
          socket.write(head)
          let sent = 0
          timer = setInterval(() => {
            if (sent < body.length && !closed) socket.write(body[sent++]!)
          }, everyMs)
        },
        data(_socket, data) {
          received.push(Buffer.from(data).toString('latin1'))
        },
        close: finish,
        error: finish,
      },
    })
  })
  return { done, text: () => received.join('') }
}
