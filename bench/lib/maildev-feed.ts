/**
 * maildev's push feed: the socket.io channel its web UI listens on ("newMail" events),
 * spoken directly over a WebSocket (Engine.IO v4 framing) so no client library is needed.
 * maildev adds a mail to its store and emits the event in the same tick, so polling its
 * REST API could never see a mail earlier than this feed does.
 */

export class MaildevFeed {
  private waiters: Array<(at: number) => void> = []
  events = 0

  private constructor(private readonly ws: WebSocket) {}

  static connect(base: string): Promise<MaildevFeed> {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`)
    const feed = new MaildevFeed(ws)
    return new Promise((resolve, reject) => {
      ws.onerror = () => reject(new Error('maildev feed: WebSocket error'))
      ws.onmessage = (event) => {
        const at = performance.now()
        const packet = String(event.data)
        if (packet.startsWith('0'))
          ws.send('40') // Engine.IO open: join the default namespace
        else if (packet.startsWith('40')) resolve(feed)
        else if (packet === '2')
          ws.send('3') // ping, pong
        else if (packet.startsWith('42["newMail"')) {
          feed.events++
          feed.waiters.shift()?.(at)
        }
      }
    })
  }

  /** Resolves with performance.now() of the next newMail event. */
  nextMail(): Promise<number> {
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  close(): void {
    this.ws.close()
  }
}
