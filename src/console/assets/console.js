// The console's only script (served from our origin; the CSP forbids inline script).
// Copy buttons and confirmation prompts. Pages work without it.

document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null
  if (!button) return
  const field = document.getElementById(button.getAttribute('data-copy'))
  if (!field) return
  const done = () => {
    const label = button.textContent
    button.textContent = 'Copied'
    setTimeout(() => (button.textContent = label), 1500)
  }
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(done, () => {
      field.select()
      document.execCommand('copy')
      done()
    })
  } else {
    field.select()
    document.execCommand('copy')
    done()
  }
})

document.addEventListener('submit', (event) => {
  const form = event.target
  if (!(form instanceof HTMLFormElement)) return
  const question = form.getAttribute('data-confirm')
  if (question && !window.confirm(question)) event.preventDefault()
})

// Inbox page: the server sends an event right after new mail is stored (server-sent
// events, no polling); the list is then re-read from the page itself and swapped in.
// All tabs of a browser share one stream through a SharedWorker (live-worker.js): a
// browser opens at most six connections to a host, and a stream per tab used them up.
const liveList = document.querySelector('[data-live-events]')
if (liveList && window.EventSource) {
  const status = document.getElementById('live-status')
  const say = (text) => {
    if (status) status.textContent = text
  }
  let reading = Promise.resolve()
  const refresh = () => {
    reading = reading
      .then(async () => {
        const response = await fetch(window.location.href, { credentials: 'same-origin' })
        if (!response.ok) return
        const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').getElementById(liveList.id)
        if (fresh) liveList.replaceChildren(...fresh.childNodes)
      })
      .catch(() => say('Could not refresh the list; reload the page.'))
  }
  const handlers = {
    // `ready` also follows a reconnect: re-read once in case mail arrived in between.
    ready: () => {
      say('Live: new mail appears here without reloading.')
      refresh()
    },
    message_stored: refresh,
    inbox_deleted: () => say('This inbox was deleted.'),
    // The server refused the stream (too many open pages, or signed out); no retry follows.
    closed: () => say('Live updates are off (signed out, or too many open inbox pages?); reload to see new mail.'),
    reconnecting: () => say('Connection lost; reconnecting…'),
  }
  const key = liveList.getAttribute('data-live-watch')
  if (window.SharedWorker && key) {
    const worker = new SharedWorker('/console/assets/live-worker.js', { name: 'pigeonhole-live' })
    worker.port.addEventListener('message', (event) => handlers[event.data.type]?.())
    worker.port.start()
    worker.port.postMessage({ type: 'watch', key })
    // Leaving (or entering the back/forward cache) lets the shared stream drop this inbox.
    window.addEventListener('pagehide', () => worker.port.postMessage({ type: 'unwatch' }))
    window.addEventListener('pageshow', (event) => {
      if (event.persisted) worker.port.postMessage({ type: 'watch', key })
    })
  } else {
    // No SharedWorker (Chrome on Android): this page's own stream, closed while the tab is
    // hidden so background tabs hold no connection; `ready` on return re-reads the list.
    let events = null
    let deleted = false
    const open = () => {
      if (events || deleted) return
      events = new EventSource(liveList.getAttribute('data-live-events'))
      for (const type of ['ready', 'message_stored']) events.addEventListener(type, handlers[type])
      events.addEventListener('inbox_deleted', () => {
        deleted = true
        close()
        handlers.inbox_deleted()
      })
      events.addEventListener('error', () => (events.readyState === EventSource.CLOSED ? handlers.closed() : handlers.reconnecting()))
    }
    const close = () => {
      events?.close()
      events = null
    }
    document.addEventListener('visibilitychange', () => (document.visibilityState === 'hidden' ? close() : open()))
    if (document.visibilityState !== 'hidden') open()
  }
}
