// One live stream per browser, shared by every console tab (a SharedWorker, served from
// our origin). Each inbox page tells the worker which inbox it shows; the worker keeps a
// single event stream for the set of them (GET /console/live?watch=org:inbox&...) and
// forwards each event to the tabs of its inbox. A browser allows six HTTP/1.1 connections
// per host, so one stream per tab froze the console at the seventh tab.

/**
 * Each connected page's port, and the org:inbox keys it watches (one for an inbox page, a list for the Inboxes page).
 */
const watching = new Map()
/** The server takes this many keys in one stream (routes/live.ts); inbox pages' own keys go first. */
const MAX_KEYS = 50
let source = null
let streamed = ''

function post(port, message) {
  try {
    port.postMessage(message)
  } catch {
    watching.delete(port)
  }
}

function broadcast(message, inbox) {
  for (const [port, keys] of watching) if (!inbox || keys.some((key) => key.endsWith(`:${inbox}`))) post(port, message)
}

/** Reopens the stream when the set of watched inboxes changed, or when the last one ended; false when it stays. */
function update() {
  const all = [...watching.values()]
  const keys = [...new Set([...all.filter((k) => k.length === 1), ...all.filter((k) => k.length > 1)].flat())]
    .slice(0, MAX_KEYS)
    .sort()
  const wanted = keys.join('&')
  if (wanted === streamed && source && source.readyState !== EventSource.CLOSED) return false
  if (source) source.close()
  source = null
  streamed = wanted
  if (keys.length === 0) return true
  const stream = new EventSource(`/console/live?${keys.map((key) => `watch=${encodeURIComponent(key)}`).join('&')}`)
  source = stream
  // `ready` comes once the server has subscribed (and after each reconnect): every page re-reads its list once.
  stream.addEventListener('ready', () => broadcast({ type: 'ready' }))
  stream.addEventListener('message_stored', (event) => broadcast({ type: 'message_stored' }, event.data))
  stream.addEventListener('inbox_deleted', (event) => broadcast({ type: 'inbox_deleted' }, event.data))
  stream.addEventListener('error', () => {
    if (stream !== source) return
    broadcast({ type: stream.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting' })
  })
  return true
}

self.addEventListener('connect', (event) => {
  const port = event.ports[0]
  port.addEventListener('message', (message) => {
    const data = message.data || {}
    const keys =
      typeof data.key === 'string'
        ? [data.key]
        : Array.isArray(data.keys)
          ? data.keys.filter((k) => typeof k === 'string')
          : []
    if (data.type === 'watch' && keys.length > 0) {
      watching.set(port, keys)
      // Joined a stream already open for this inbox: this page gets its own `ready` now.
      if (!update() && source.readyState === EventSource.OPEN) post(port, { type: 'ready' })
    } else if (data.type === 'unwatch') {
      watching.delete(port)
      update()
    }
  })
  // Browsers that report a closed port (a tab gone without pagehide) let the stream shrink too.
  port.addEventListener('close', () => {
    watching.delete(port)
    update()
  })
  port.start()
})
