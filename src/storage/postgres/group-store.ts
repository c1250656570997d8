/**
 * Group commit for PostgreSQL mode's stores: deliveries that arrive from many SMTP connections
 * while earlier ones are being stored share one transaction (one BEGIN, one COMMIT, one flush
 * of the commit record), as the SQLite adapter's group commit does (../sqlite/group-commit.ts).
 * A commit's flush is most of what a stored message costs the database, and BEGIN and COMMIT
 * two of its round trips; shared by a batch, both are paid once for many messages.
 *
 * At most MAX_BATCHES_IN_FLIGHT transactions run at once; jobs queued meanwhile wait for the
 * next free one and then go together (at most MAX_BATCH_JOBS). A quiet machine's job starts at
 * once, in a batch of one: no waiting added. Two transactions in flight never share a row that
 * every job of a key updates (`sharedRowsOf`: a store's organisation counters): the second
 * would only wait on the first's row lock until its commit was flushed, and meanwhile take the
 * jobs that would have made the next batch bigger. So a job whose key is in flight waits for
 * that batch, while jobs of other keys start beside it.
 *
 * If a batch fails, it rolled back as a whole and each of its jobs runs again alone, so one
 * job's failure (a constraint, a deadlock) stays with that job; every promise settles only
 * after its job's own transaction committed. A failure of the database itself (`retryAlone`
 * says no: unreachable, silent, out of connections) fails every job of the batch at once:
 * running each again would only wait as long once more.
 */

/** Transactions storing at once; the machine's pool keeps the rest of its connections for reads and holds. */
export const MAX_BATCHES_IN_FLIGHT = 2
/** Jobs in one transaction: bounds how long its locks are held and how large its statements grow. */
export const MAX_BATCH_JOBS = 32

interface Job<I, O> {
  input: I
  resolve: (value: O) => void
  reject: (error: unknown) => void
}

/**
 * `run` stores its inputs in one transaction and answers one output per input, in order;
 * `retryAlone` says whether a batch's failure may be one job's (by default, any may);
 * `sharedRowsOf` names the keys of the rows a job updates that other jobs of the same key update
 * too (by default none).
 */
export function groupStore<I, O>(
  run: (inputs: I[]) => Promise<O[]>,
  retryAlone: (error: unknown) => boolean = () => true,
  sharedRowsOf: (input: I) => readonly string[] = () => [],
): (input: I) => Promise<O> {
  let queue: Job<I, O>[] = []
  let inFlight = 0
  /** Keys of the batches in flight: no two of them share one. */
  const busy = new Set<string>()

  const runAlone = (job: Job<I, O>) =>
    run([job.input]).then(
      ([output]) => job.resolve(output as O),
      (error: unknown) => job.reject(error),
    )

  const next = () => {
    while (inFlight < MAX_BATCHES_IN_FLIGHT && queue.length > 0) {
      // In arrival order, the jobs that share no row with a batch in flight; the rest wait.
      const jobs: Job<I, O>[] = []
      const waiting: Job<I, O>[] = []
      for (const job of queue) {
        if (jobs.length < MAX_BATCH_JOBS && !sharedRowsOf(job.input).some((key) => busy.has(key))) jobs.push(job)
        else waiting.push(job)
      }
      if (jobs.length === 0) return
      queue = waiting
      const keys = [...new Set(jobs.flatMap((job) => sharedRowsOf(job.input)))]
      for (const key of keys) busy.add(key)
      inFlight++
      const batch =
        jobs.length === 1
          ? runAlone(jobs[0]!)
          : run(jobs.map((job) => job.input)).then(
              (outputs) => {
                for (const [i, job] of jobs.entries()) job.resolve(outputs[i] as O)
              },
              // Rolled back as a whole: each job again in a transaction of its own.
              (error: unknown) => {
                if (retryAlone(error)) return Promise.all(jobs.map(runAlone))
                for (const job of jobs) job.reject(error)
              },
            )
      void batch.finally(() => {
        inFlight--
        for (const key of keys) busy.delete(key)
        next()
      })
    }
  }

  return (input) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ input, resolve, reject })
      next()
    })
}
