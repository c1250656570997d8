/**
 * Preloaded by `bun test` (bunfig.toml): turns a plain `bun test` into
 * `bun test --parallel=N --no-isolate --timings=test/timings.json …` with the same arguments, so the
 * README's command spreads the files over worker processes, slowest first. Most of a file's
 * time is spent waiting on servers, databases and timers, not on the CPU, so a few files side
 * by side finish in a fraction of the serial time.
 *
 * Bun 1.4.5 reads neither `parallel` nor `timings` from bunfig.toml's [test] section, so the
 * preload starts the parallel run itself and exits with its status. It does nothing (the run
 * stays serial, in this process) when:
 * - the command already says `--parallel` (or this is one of its workers, `--test-worker`);
 * - `PIGEONHOLE_TEST_SERIAL=1` is set (one process: a debugger, or a file's own output order);
 * - the command is `--watch`, `--inspect…` or `--only-failures`-style interactive use;
 * - /proc is missing (not Linux), so this process's own arguments cannot be read.
 *
 * Refresh the timings after adding slow files: `bun test --parallel --timings=test/timings.json
 * --update-timings` (see test/README.md).
 */
import { existsSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'

/**
 * Workers: two per core and two more. The files mostly wait (servers, databases, timers), so
 * with one more than the cores the run was bound by waiting: 141 s with 3 workers against
 * 104-113 s with 5, on this two-core machine with nothing else running (load average 6 to 7
 * with 5, where the cores are then busy). Three runs of 5 passed whole, one beside two other
 * engineers' benchmarks (load 11); the tests whose margin is the client's own pacing
 * (smtp.deadlines) kept it. Once the multi-machine tests ran a bundle and the workers skipped
 * the FTL tier, 6 took 81.8 s twice where 5 took 89.3 to 91.5 s (quiet, both whole).
 */
const WORKERS = Math.max(3, 2 * availableParallelism() + 2)
/**
 * Bun's default deadline per test is 5 s; files that start servers set their own
 * (test/README.md). With several files sharing the cores, a test without one that takes 2 s
 * alone can pass 5 s, so the parallel run's default is 30 s: a deadline catches a hang, it is
 * not a speed bound. A `--timeout` given on the command line wins.
 */
const DEFAULT_TIMEOUT_MS = 30_000
const TIMINGS = join(import.meta.dir, '..', 'timings.json')
const STAYS_SERIAL = ['--test-worker', '--watch', '--hot', '--inspect', '--inspect-brk', '--inspect-wait']

function ownArguments(): string[] | null {
  try {
    return readFileSync('/proc/self/cmdline', 'utf8').split('\0').slice(0, -1)
  } catch {
    return null
  }
}

function parallelCommand(): string[] | null {
  if (process.env.PIGEONHOLE_TEST_SERIAL === '1') return null
  const args = ownArguments()
  const at = args?.indexOf('test') ?? -1
  if (!args || at < 0) return null
  const rest = args.slice(at + 1)
  if (
    rest.some(
      (arg) => arg.startsWith('--parallel') || STAYS_SERIAL.some((flag) => arg === flag || arg.startsWith(`${flag}=`)),
    )
  )
    return null
  const timings =
    existsSync(TIMINGS) && !rest.some((arg) => arg.startsWith('--timings')) ? [`--timings=${TIMINGS}`] : []
  const timeout = rest.some((arg) => arg.startsWith('--timeout')) ? [] : [`--timeout=${DEFAULT_TIMEOUT_MS}`]
  // --no-isolate: each worker keeps one global across its files, as the serial run keeps one
  // across all of them (which the suite has always passed in). Isolation re-imports the server
  // for every file: 178 s of CPU a run against 127 s without it, on this tree.
  const isolation = rest.some((arg) => arg === '--isolate' || arg === '--no-isolate') ? [] : ['--no-isolate']
  return [process.execPath, 'test', `--parallel=${WORKERS}`, ...isolation, ...timings, ...timeout, ...rest]
}

/**
 * The workers run without JavaScriptCore's top tier (FTL, `BUN_JSC_useFTLJIT=0`, as does every
 * child that inherits their environment). A test file runs each function briefly, so the
 * background threads that compile hot functions to FTL spent about a sixth of the CPU of a
 * run of test/console and test/api, mostly on code that then ran a few times more; without FTL
 * the same files took 12% less CPU, 5% for test/smtp, test/http and test/inbound, the main
 * threads' share unchanged (perf samples; load average 9 to 13). The code the tests run is the
 * same; only how far its hottest functions are optimised differs. An explicit setting wins.
 */
const JIT = { BUN_JSC_useFTLJIT: '0' }

const command = parallelCommand()
if (command) {
  console.error(
    `(the files run in ${WORKERS} worker processes, slowest first; PIGEONHOLE_TEST_SERIAL=1 runs them in this one)`,
  )
  const result = Bun.spawnSync(command, { stdio: ['inherit', 'inherit', 'inherit'], env: { ...JIT, ...process.env } })
  process.exit(result.exitCode ?? 1)
}
