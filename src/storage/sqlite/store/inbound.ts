/**
 * The SQLite side of InboundStore (../../port/inbound.ts). The hot path: RCPT TO's read and
 * the store run prepared statements (inbound-statements.ts), and the store is one job of the
 * group commit (one COMMIT and one WAL sync per event-loop turn, a failing job rolled back and
 * run again alone), so it resolves only once the message is durable. A large message's blobs
 * are written first, on the stager's thread (../blob-stager.ts), and its job writes the rest.
 */
import { inArray, lt, lte } from 'drizzle-orm'
import type {
  AdmissionFacts,
  InboundDelivery,
  InboundPeriods,
  InboundStore,
  StoreInboundInput,
} from '../../port/inbound.ts'
import { inboundBursts, messages } from '../schema.ts'
import type { Db, Storage } from '../../types.ts'
import { STAGE_FROM_BYTES, type StagedRow, stagerOf } from '../blob-stager.ts'
import { transaction, transactionInGroup } from '../transaction.ts'
import { inboundStatements } from './inbound-statements.ts'

/** Counts and limits for one inbox in `periods`; the caller runs it inside a transaction or a synchronous read. */
function factsFor(db: Db, inbox: { id: string; organizationId: string }, periods: InboundPeriods): AdmissionFacts {
  const statements = inboundStatements(db)
  const org = inbox.organizationId
  return {
    inboxId: inbox.id,
    organizationId: org,
    limits: statements.limitOverrides.get({ organizationId: org }) ?? {
      monthlyEmails: null,
      inboxBurst: null,
      orgBurst: null,
    },
    counts: {
      monthReceived: statements.receivedInMonth.get({ organizationId: org, month: periods.month })?.received ?? 0,
      inboxAccepted: statements.acceptedInBucket.get({ subjectId: inbox.id, bucket: periods.bucket })?.accepted ?? 0,
      orgAccepted: statements.acceptedInBucket.get({ subjectId: org, bucket: periods.bucket })?.accepted ?? 0,
    },
  }
}

/** Every delivery's blob rows: one raw source per copy, one content per attachment of each. */
function blobRows<D extends InboundDelivery>({ message, deliveries }: StoreInboundInput<D>): StagedRow[] {
  return deliveries.flatMap((delivery) => [
    { messageId: delivery.messageId, bytes: message.raw, sha256: message.rawSha256 },
    ...message.attachments.map((attachment, position) => ({
      attachmentId: delivery.attachmentIds[position]!,
      bytes: attachment.content,
      sha256: attachment.sha256,
    })),
  ])
}

/**
 * A large message: its blobs staged first, then the job that makes them part of a message.
 * Whatever copy was not stored (its inbox gone, a limit, a failed commit) has its staged
 * rows removed; the removal skips a row whose message exists, so a commit whose sync failed
 * after it keeps its blobs.
 */
async function storeStaged<D extends InboundDelivery>(
  storage: Storage,
  input: StoreInboundInput<D>,
  bytes: number,
): Promise<D[]> {
  const stager = stagerOf(storage)!
  const { deliveries } = input
  await stager.stage(blobRows(input))
  let stored: D[] = []
  try {
    stored = await storeInGroup(storage, input, bytes, true)
    return stored
  } finally {
    const left = deliveries.filter((delivery) => !stored.includes(delivery))
    void stager
      .unstage(
        left.map((delivery) => delivery.messageId),
        left.flatMap((delivery) => delivery.attachmentIds),
      )
      .catch(() => {}) // what remains goes at the next start
  }
}

function storeInGroup<D extends InboundDelivery>(
  storage: Storage,
  { message, deliveries, decide, committed }: StoreInboundInput<D>,
  bytes: number,
  staged: boolean,
): Promise<D[]> {
  // Prepared on the same (only) connection, so they run inside the group's write transaction.
  const statements = inboundStatements(storage.db)
  return transactionInGroup(
    storage,
    () => {
      const { month, bucket } = decide.begin()
      const done: D[] = []
      for (const delivery of deliveries) {
        const inbox = statements.activeInboxAddress.get({ inboxId: delivery.inboxId })
        if (!inbox) continue // deleted since RCPT TO
        if (decide.recheckNeeded(delivery)) {
          const facts = factsFor(
            storage.db,
            { id: delivery.inboxId, organizationId: delivery.organizationId },
            { month, bucket },
          )
          if (!decide.recheck(delivery, facts)) continue
        }
        const { receivedAt, expiresAt } = decide.times(
          delivery,
          statements.newestReceivedAt.get({ inboxId: delivery.inboxId })?.at,
        )
        const { messageId, organizationId } = delivery
        statements.insertMessage.run({
          id: messageId,
          inboxId: delivery.inboxId,
          organizationId,
          fromName: message.fromName,
          fromAddress: message.fromAddress,
          toAddress: inbox.address,
          subject: message.subject,
          preview: message.preview,
          sizeBytes: message.sizeBytes,
          receivedAt,
          expiresAt,
          searchSubject: message.searchSubject,
          searchSender: message.searchSender,
          searchSenderDomain: message.searchSenderDomain,
          internetMessageId: message.internetMessageId,
        })
        statements.insertContent.run({
          messageId,
          textBody: message.textBody,
          htmlBody: message.htmlBody,
          headersJson: message.headersJson,
        })
        statements.insertSearchText.run({ messageId, text: message.searchText })
        if (!staged) statements.insertSource.run({ messageId, raw: message.raw, sha256: message.rawSha256 })
        message.attachments.forEach((attachment, position) => {
          const attachmentId = delivery.attachmentIds[position]!
          statements.insertAttachment.run({
            id: attachmentId,
            messageId,
            organizationId,
            position,
            filename: attachment.filename,
            contentType: attachment.contentType,
            sizeBytes: attachment.sizeBytes,
            disposition: attachment.disposition,
            contentId: attachment.contentId,
          })
          if (!staged)
            statements.insertAttachmentContent.run({
              attachmentId,
              content: attachment.content,
              sha256: attachment.sha256,
            })
        })
        statements.countMonthlyEmail.run({ organizationId, month })
        statements.bumpBurst.run({ subjectId: delivery.inboxId, bucket })
        statements.bumpBurst.run({ subjectId: organizationId, bucket })
        decide.stored(delivery)
        done.push(delivery)
      }
      return done
    },
    bytes,
    committed,
  )
}

export function sqliteInbound(storage: Storage): InboundStore {
  return {
    async admissionFacts(localPart, periods) {
      const inbox = inboundStatements(storage.db).activeInboxByLocalPart.get({ localPart })
      // One connection, one thread: these synchronous reads see one state without a transaction.
      return inbox ? factsFor(storage.db, inbox, periods) : null
    },

    storeMessage: (input) => {
      const bytes =
        input.message.raw.byteLength +
        input.message.attachments.reduce((sum, attachment) => sum + attachment.content.byteLength, 0)
      // The job still declares the bytes: the staged WAL frames are checkpointed on the worker too.
      return bytes >= STAGE_FROM_BYTES && stagerOf(storage)?.usable
        ? storeStaged(storage, input, bytes)
        : storeInGroup(storage, input, bytes, false)
    },

    async deleteExpiredMessages(now, limit) {
      return transaction(storage, (tx) => {
        const expired = tx
          .select({ id: messages.id, inboxId: messages.inboxId })
          .from(messages)
          .where(lte(messages.expiresAt, now))
          .limit(limit)
          .all()
        // Contents, sources, search texts and attachments go by ON DELETE CASCADE.
        if (expired.length > 0)
          tx.delete(messages)
            .where(
              inArray(
                messages.id,
                expired.map((row) => row.id),
              ),
            )
            .run()
        return { inboxIds: expired.map((row) => row.inboxId) }
      })
    },

    async deleteBurstBucketsBefore(before) {
      transaction(storage, (tx) => tx.delete(inboundBursts).where(lt(inboundBursts.bucketStartsAt, before)).run())
    },

    recordHeartbeat: (name, value) =>
      transactionInGroup(storage, () => {
        inboundStatements(storage.db).writeSetting.run({ name, value })
      }),

    async probeHeartbeat(name, value) {
      const { sqlite } = storage
      const { timeout } = sqlite.query('PRAGMA busy_timeout').get() as { timeout: number }
      try {
        sqlite.exec('PRAGMA busy_timeout = 0')
        // Not through storage.write, whose observer would count a busy lock as a failed write.
        // A real write (taking the write lock alone proves nothing: on a volume remounted
        // read-only SQLite still takes its locks, which live in shared memory).
        storage.db.transaction(() => inboundStatements(storage.db).writeSetting.run({ name, value }), {
          behavior: 'immediate',
        })
        storage.observer.committed()
        return { outcome: 'committed' }
      } catch (error) {
        if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) return { outcome: 'busy' }
        storage.observer.failed(error) // logged once when the failing state begins, not per probe
        return { outcome: 'failed', error }
      } finally {
        sqlite.exec(`PRAGMA busy_timeout = ${Number(timeout)}`)
      }
    },

    async touch() {
      storage.sqlite.query('SELECT 1').get()
    },
  }
}
