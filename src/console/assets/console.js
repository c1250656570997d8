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

// A button's own data-confirm (empty: no question) wins over its form's.
document.addEventListener('submit', (event) => {
  const form = event.target
  if (!(form instanceof HTMLFormElement)) return
  const asked = event.submitter?.getAttribute('data-confirm')
  const question = asked ?? form.getAttribute('data-confirm')
  if (question && !window.confirm(question)) event.preventDefault()
})

// The message list's "select all on this page" box, for the bulk buttons.
document.addEventListener('change', (event) => {
  const box = event.target
  if (!(box instanceof HTMLInputElement) || box.id !== 'select-all') return
  for (const pick of document.querySelectorAll('#message-list input[name="selected"]')) pick.checked = box.checked
})

// Times: the page has each to the second in UTC; one from the last 24 hours reads as
// "12 s ago" (kept current), with the exact time on hover.
const relative = (ms) => {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s} s ago`
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s ago`
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min ago`
}
const showRelativeTimes = () => {
  for (const time of document.querySelectorAll('time[datetime]')) {
    const at = time.getAttribute('datetime')
    if (!time.title) time.title = `${at.replace('T', ' ').slice(0, 19)} UTC`
    const age = Date.now() - Date.parse(at)
    if (age >= -5000 && age < 86_400_000) time.textContent = relative(age)
  }
}
showRelativeTimes()
setInterval(showRelativeTimes, 5000)

// An open inbox's unread count: on the page, in the tab's title and as a badge on the
// favicon (drawn here; the page's own icon is empty), so a background tab shows new mail.
const plainTitle = document.title
const showUnread = (count) => {
  const badge = document.getElementById('inbox-unread')
  if (!badge) return
  badge.textContent = `${count} unread`
  badge.setAttribute('data-unread', String(count))
  document.title = count > 0 ? `(${count}) ${plainTitle}` : plainTitle
  const icon = document.querySelector('link[rel="icon"]')
  if (!icon) return
  if (count === 0) {
    icon.setAttribute('href', 'data:,')
    return
  }
  const canvas = document.createElement('canvas')
  canvas.width = canvas.height = 32
  const draw = canvas.getContext('2d')
  if (!draw) return
  draw.fillStyle = '#c62828'
  draw.beginPath()
  draw.arc(16, 16, 16, 0, 2 * Math.PI)
  draw.fill()
  draw.fillStyle = '#fff'
  draw.font = 'bold 20px sans-serif'
  draw.textAlign = 'center'
  draw.textBaseline = 'middle'
  draw.fillText(count > 99 ? '99+' : String(count), 16, 17, 30)
  icon.setAttribute('href', canvas.toDataURL('image/png'))
}
{
  const badge = document.getElementById('inbox-unread')
  if (badge) showUnread(Number(badge.getAttribute('data-unread')))
}

// Optional browser notifications for an open inbox: asked for with the page's button, kept
// in this browser (localStorage), shown only when the tab is not what the person looks at.
const NOTIFY_KEY = 'pigeonhole-notify'
const notifyToggle = document.getElementById('notify-toggle')
const notifying = () =>
  window.Notification && Notification.permission === 'granted' && localStorage.getItem(NOTIFY_KEY) === 'on'
const showNotifyState = () => {
  if (notifyToggle) notifyToggle.textContent = notifying() ? 'Notifications on (turn off)' : 'Notify me of new mail'
}
if (notifyToggle && window.Notification && Notification.permission !== 'denied') {
  notifyToggle.hidden = false
  showNotifyState()
  notifyToggle.addEventListener('click', async () => {
    if (notifying()) localStorage.setItem(NOTIFY_KEY, 'off')
    else if ((await Notification.requestPermission()) === 'granted') localStorage.setItem(NOTIFY_KEY, 'on')
    showNotifyState()
  })
}
const notifyNewMail = (count, subject) => {
  if (!notifying() || (document.visibilityState === 'visible' && document.hasFocus())) return
  const where = document.querySelector('.page-title')?.firstChild?.textContent?.trim() ?? 'Pigeonhole'
  new Notification(count === 1 ? `New mail: ${subject}` : `${count} new messages, newest: ${subject}`, {
    body: where,
    tag: where,
  })
}

// Inbox page and Inboxes page: the server sends an event right after new mail is stored
// (server-sent events, no polling); the list is then re-read from the page itself and
// swapped in. The Inboxes page watches each inbox it lists (data-live-org + the ids).
// All tabs of a browser share one stream through a SharedWorker (live-worker.js): a
// browser opens at most six connections to a host, and a stream per tab used them up.
const liveList = document.querySelector('[data-live-events]')
if (liveList && window.EventSource) {
  const status = document.getElementById('live-status')
  const say = (text) => {
    if (status) status.textContent = text
  }
  // One read at a time, and one more for whatever arrived while it was in flight: a burst
  // of 80 mails costs a few reads of the list, not 80.
  let reading = false
  let stale = false
  const messageIds = () =>
    new Set([...liveList.querySelectorAll('a[href*="/messages/"]')].map((a) => a.getAttribute('href')))
  const refresh = async () => {
    stale = true
    if (reading) return
    reading = true
    try {
      while (stale) {
        stale = false
        // The list alone (x-live-list), not the whole page: less to render, send and parse.
        // The inbox page asks for its message list alone, the Inboxes page for its table alone.
        const header = liveList.hasAttribute('data-live-org') ? 'x-live-inboxes' : 'x-live-list'
        const response = await fetch(window.location.href, { credentials: 'same-origin', headers: { [header]: '1' } })
        if (!response.ok || response.headers.get(header) !== '1') continue
        const fresh = document.createElement('template')
        fresh.innerHTML = await response.text()
        const before = messageIds()
        // Keep the keyboard's place: the link that had focus has it again in the new list.
        const focused = liveList.contains(document.activeElement) ? document.activeElement.getAttribute('href') : null
        // Keep what was ticked for a bulk action (and "all on this page").
        const ticked = new Set(
          [...liveList.querySelectorAll('input[type="checkbox"]:checked')].map((box) => box.value || box.id),
        )
        liveList.replaceChildren(fresh.content)
        for (const box of liveList.querySelectorAll('input[type="checkbox"]'))
          if (ticked.has(box.value || box.id)) box.checked = true
        // After the swap, and only when it changed: drawing the badge is not on the way to the new row.
        const unread = response.headers.get('x-unread')
        if (unread !== null && unread !== document.getElementById('inbox-unread')?.getAttribute('data-unread'))
          setTimeout(() => showUnread(Number(unread)), 0)
        if (focused) [...liveList.querySelectorAll('a')].find((a) => a.getAttribute('href') === focused)?.focus()
        showRelativeTimes()
        // Announced through the status line (a live region): how many arrived, and the newest subject.
        const added = [...liveList.querySelectorAll('a[href*="/messages/"]')].filter(
          (a) => !before.has(a.getAttribute('href')),
        )
        if (added.length > 0) {
          say(`Live: ${added.length} new message${added.length === 1 ? '' : 's'}, newest "${added[0].textContent}".`)
          notifyNewMail(added.length, added[0].textContent)
        }
      }
    } catch {
      say('Could not refresh the list; reload the page.')
    } finally {
      reading = false
    }
  }
  const handlers = {
    // `ready` also follows a reconnect: re-read once in case mail arrived in between.
    ready: () => {
      say('Live: new mail appears here without reloading.')
      refresh()
    },
    message_stored: refresh,
    inbox_deleted: () => (org ? refresh() : say('This inbox was deleted.')),
    // The server refused the stream (too many open pages, or signed out); no retry follows.
    closed: () => say('Live updates are off (signed out, or too many open inbox pages?); reload to see new mail.'),
    reconnecting: () => say('Connection lost; reconnecting…'),
  }
  const org = liveList.getAttribute('data-live-org')
  const watched = (liveList.getAttribute('data-live-watch') || '').split(' ').filter(Boolean)
  const keys = org ? watched.map((id) => `${org}:${id}`) : watched
  if (window.SharedWorker && keys.length > 0) {
    const worker = new SharedWorker('/console/assets/live-worker.js', { name: 'pigeonhole-live' })
    worker.port.addEventListener('message', (event) => handlers[event.data.type]?.())
    worker.port.start()
    // An inbox page watches its inbox; the Inboxes page watches a list of them.
    const watch = () => worker.port.postMessage(org ? { type: 'watch', keys } : { type: 'watch', key: keys[0] })
    watch()
    // Leaving (or entering the back/forward cache) lets the shared stream drop this inbox.
    window.addEventListener('pagehide', () => worker.port.postMessage({ type: 'unwatch' }))
    window.addEventListener('pageshow', (event) => {
      if (event.persisted) watch()
    })
  } else {
    // No SharedWorker (Chrome on Android): this page's own stream, closed while the tab is
    // hidden so background tabs hold no connection; `ready` on return re-reads the list.
    let events = null
    let deleted = false
    const open = () => {
      if (events || deleted) return
      const url = org
        ? `${liveList.getAttribute('data-live-events')}?${keys.map((k) => `watch=${encodeURIComponent(k)}`).join('&')}`
        : liveList.getAttribute('data-live-events')
      events = new EventSource(url)
      for (const type of ['ready', 'message_stored']) events.addEventListener(type, handlers[type])
      events.addEventListener('inbox_deleted', () => {
        // The Inboxes page re-reads its list; an inbox page's stream ends with its inbox.
        if (org) return refresh()
        deleted = true
        close()
        handlers.inbox_deleted()
      })
      events.addEventListener('error', () =>
        events.readyState === EventSource.CLOSED ? handlers.closed() : handlers.reconnecting(),
      )
    }
    const close = () => {
      events?.close()
      events = null
    }
    document.addEventListener('visibilitychange', () => (document.visibilityState === 'hidden' ? close() : open()))
    if (document.visibilityState !== 'hidden') open()
  }
}

// Keyboard shortcuts (listed on the message page): j/k older/newer message, u the inbox,
// # or Delete deletes (after the usual prompt), 1-7 open and jump to a view, c copies the first
// code. On an inbox page j/k move through the messages and Enter opens one. Keys typed
// into a field, or with a modifier, are left alone.
const VIEWS = {
  1: 'view-html',
  2: 'view-text',
  3: 'html-source',
  4: 'raw-source',
  5: 'view-attachments',
  6: 'view-headers',
  7: 'message-extracts',
}
document.addEventListener('keydown', (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return
  if (event.target instanceof Element && event.target.closest('input, textarea, select, [contenteditable]')) return
  const follow = (id) => {
    const link = document.getElementById(id)
    if (link) window.location.assign(link.href)
  }
  const key = event.key
  if (document.getElementById('delete-message')) {
    if (key === 'j') follow('older-message')
    else if (key === 'k') follow('newer-message')
    else if (key === 'u') follow('back-to-inbox')
    else if (key === '#' || key === 'Delete') document.getElementById('delete-message').requestSubmit()
    else if (key === 'c') document.querySelector('#message-codes [data-copy]')?.click()
    else if (VIEWS[key]) {
      const view = document.getElementById(VIEWS[key])
      if (!view) return
      if (view.tagName === 'DETAILS') view.open = true
      view.scrollIntoView({ block: 'start' })
    } else return
    event.preventDefault()
  } else if (liveList && (key === 'j' || key === 'k')) {
    const links = [...liveList.querySelectorAll('a[href*="/messages/"]')]
    if (links.length === 0) return
    const at = links.indexOf(document.activeElement)
    const next = at < 0 ? 0 : Math.min(links.length - 1, Math.max(0, at + (key === 'j' ? 1 : -1)))
    links[next].focus()
    event.preventDefault()
  }
})

// Message page: the email's frame takes the height of the email (frame-height.ts posts it
// from inside the sandbox; only a number from that frame is taken, and bounded), so the
// page scrolls, not a box inside it. Without this script the frame keeps its CSS height.
const messageFrame = document.getElementById('message-html')
if (messageFrame) {
  const MAX_FRAME_HEIGHT = 30_000
  window.addEventListener('message', (event) => {
    if (event.source !== messageFrame.contentWindow || typeof event.data !== 'object' || event.data === null) return
    const height = event.data.pigeonholeFrameHeight
    if (typeof height !== 'number' || !Number.isFinite(height)) return
    messageFrame.style.height = `${Math.min(MAX_FRAME_HEIGHT, Math.max(80, Math.ceil(height) + 2))}px`
    messageFrame.classList.add('sized')
  })

  // Width and remote images switch in place: the frame's class or address changes, the
  // page's URL follows (so a reload or a shared link keeps the choice), the scroll stays.
  const widths = document.querySelectorAll('.preview-widths a[data-width]')
  const images = document.getElementById('remote-images-toggle')
  const note = document.getElementById('remote-images-note')
  const setUrl = (url) => window.history.replaceState(window.history.state, '', url)
  for (const link of widths) {
    link.addEventListener('click', (event) => {
      if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return
      event.preventDefault()
      const width = link.getAttribute('data-width')
      messageFrame.classList.remove('width-phone', 'width-tablet', 'width-desktop')
      messageFrame.classList.add(`width-${width}`)
      for (const other of widths) {
        if (other === link) other.setAttribute('aria-current', 'true')
        else other.removeAttribute('aria-current')
      }
      setUrl(link.href)
      // The other toggle's link keeps this width.
      if (images) {
        const next = new URL(images.href)
        if (width === 'desktop') next.searchParams.delete('width')
        else next.searchParams.set('width', width)
        images.href = next.pathname + next.search
      }
    })
  }
  images?.addEventListener('click', (event) => {
    if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return
    event.preventDefault()
    const remote = images.getAttribute('data-images') === 'remote'
    const frameUrl = new URL(messageFrame.src)
    if (remote) frameUrl.searchParams.set('images', 'remote')
    else frameUrl.searchParams.delete('images')
    messageFrame.src = frameUrl.pathname + frameUrl.search
    setUrl(images.href)
    for (const link of widths) {
      const next = new URL(link.href)
      if (remote) next.searchParams.set('images', 'remote')
      else next.searchParams.delete('images')
      link.href = next.pathname + next.search
    }
    const back = new URL(images.href)
    if (remote) back.searchParams.delete('images')
    else back.searchParams.set('images', 'remote')
    images.href = back.pathname + back.search
    images.setAttribute('data-images', remote ? 'blocked' : 'remote')
    images.textContent = remote ? 'Block remote images' : 'Load remote images'
    if (note)
      note.textContent = remote
        ? 'Remote images are loaded (the sender can see that the message was opened).'
        : 'Scripts, forms and remote content are blocked.'
  })
}

// A link to a collapsed section (the attachment count in a message's summary) opens it.
document.addEventListener('click', (event) => {
  const link = event.target instanceof Element ? event.target.closest('a[data-open]') : null
  const section = link && document.getElementById(link.getAttribute('data-open'))
  if (section && section.tagName === 'DETAILS') section.open = true
})
