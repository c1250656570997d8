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
  const events = new EventSource(liveList.getAttribute('data-live-events'))
  // `ready` also follows a reconnect: re-read once in case mail arrived in between.
  events.addEventListener('ready', () => {
    say('Live: new mail appears here without reloading.')
    refresh()
  })
  events.addEventListener('message_stored', refresh)
  events.addEventListener('inbox_deleted', () => {
    events.close()
    say('This inbox was deleted.')
  })
  events.addEventListener('error', () => {
    // CLOSED: the server refused the stream (too many open pages, or signed out); no retry follows.
    if (events.readyState === EventSource.CLOSED) say('Live updates are off (too many open inbox pages?); reload to see new mail.')
    else say('Connection lost; reconnecting…')
  })
}
