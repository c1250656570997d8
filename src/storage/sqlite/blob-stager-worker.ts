/**
 * The blob stager's worker (blob-stager.ts says why it exists) and the lock it shares with
 * the server's thread. The worker is plain JS in a string, so no build step is needed (as
 * checkpointer.ts). It writes each row in a transaction of its own under the shared lock,
 * removes rows of copies that were not stored, and at its start the rows a crash left.
 */

import { CLOSE_ON_REQUEST } from './file-worker.ts'

/** Lock cells: OWNER holds FREE, WORKER or SERVER; SERVER_WAITING is 1 while a batch waits. */
export const OWNER = 0
export const SERVER_WAITING = 1
export const FREE = 0
const WORKER = 1
export const SERVER = 2

/** Runs in the worker. */
export const WORKER_SOURCE = `
import { Database } from 'bun:sqlite'
const OWNER = ${OWNER}, SERVER_WAITING = ${SERVER_WAITING}, FREE = ${FREE}, WORKER = ${WORKER}
let db = null
let lock = null
let insertSource, insertContent, dropSource, dropContent
const acquire = () => {
  // A batch of the server's waits: let it go first (bounded, so nothing waits forever).
  if (Atomics.load(lock, SERVER_WAITING) === 1) Atomics.wait(lock, SERVER_WAITING, 1, 50)
  while (Atomics.compareExchange(lock, OWNER, FREE, WORKER) !== FREE) {
    Atomics.wait(lock, OWNER, Atomics.load(lock, OWNER), 20)
  }
}
const release = () => {
  Atomics.store(lock, OWNER, FREE)
  Atomics.notify(lock, OWNER)
  if (Atomics.load(lock, SERVER_WAITING) === 1) postMessage({ type: 'free' })
}
const locked = (work) => {
  acquire()
  try {
    return db.transaction(work).immediate()
  } finally {
    release()
  }
}
const drop = (messageIds, attachmentIds) => {
  for (const id of messageIds) locked(() => dropSource.run(id, id))
  for (const id of attachmentIds) locked(() => dropContent.run(id, id))
}
const failure = (error) => ({ message: String(error && error.message || error), code: error && error.code })
self.onmessage = ({ data }) => {
  if (data.type === 'open') {
    try {
      lock = new Int32Array(data.lock)
      db = new Database(data.path)
      db.exec('PRAGMA busy_timeout = 5000')
      db.exec('PRAGMA foreign_keys = OFF')
      db.exec('PRAGMA synchronous = NORMAL')
      // The server's connection and checkpointer.ts decide when to checkpoint.
      db.exec('PRAGMA wal_autocheckpoint = 0')
      // From query(), not prepare(): close() finalizes the statements query() cached, and a
      // connection with a statement left unfinalized does not close (SQLite keeps it open
      // until the GC finalizes the statement, here when the terminated thread is torn down).
      insertSource = db.query('INSERT INTO message_sources (message_id, raw, sha256) VALUES (?, ?, ?)')
      insertContent = db.query('INSERT INTO attachment_contents (attachment_id, content, sha256) VALUES (?, ?, ?)')
      dropSource = db.query(
        'DELETE FROM message_sources WHERE message_id = ? AND NOT EXISTS (SELECT 1 FROM messages WHERE id = ?)',
      )
      dropContent = db.query(
        'DELETE FROM attachment_contents WHERE attachment_id = ? ' +
          'AND NOT EXISTS (SELECT 1 FROM attachments WHERE id = ?)',
      )
      // Left by a crash between staging and commit: no message owns them.
      const cleared = locked(() =>
        db.query('DELETE FROM message_sources WHERE message_id NOT IN (SELECT id FROM messages)').run().changes +
        db.query('DELETE FROM attachment_contents WHERE attachment_id NOT IN (SELECT id FROM attachments)').run()
          .changes)
      postMessage({ type: 'opened', cleared })
    } catch (error) {
      postMessage({ type: 'failed', error: String(error) })
    }
    return
  }
  if (data.type === 'stage') {
    const written = { messageIds: [], attachmentIds: [] }
    try {
      for (const row of data.rows) {
        if (row.messageId) {
          locked(() => insertSource.run(row.messageId, new Uint8Array(row.bytes), row.sha256))
          written.messageIds.push(row.messageId)
        } else {
          locked(() => insertContent.run(row.attachmentId, new Uint8Array(row.bytes), row.sha256))
          written.attachmentIds.push(row.attachmentId)
        }
      }
      postMessage({ type: 'staged', id: data.id })
      data.rows = null
      // The rows' bytes (17 MiB for the largest message) are garbage now; this thread's heap is
      // tiny, so its collector would wait long before freeing them by itself, and under a flood
      // several messages' bytes piled up. A full collection here costs little and no other thread.
      Bun.gc(true)
    } catch (error) {
      try {
        drop(written.messageIds, written.attachmentIds)
      } catch {
        // left for the next start's clean-up
      }
      postMessage({ type: 'staged', id: data.id, error: failure(error) })
    }
    return
  }
  if (data.type === 'unstage') {
    try {
      drop(data.messageIds, data.attachmentIds)
    } catch {
      // left for the next start's clean-up
    }
    postMessage({ type: 'unstaged', id: data.id })
    return
  }
${CLOSE_ON_REQUEST}
}
`
