/**
 * The tests' scratch folders (support/scratch.ts) go when whoever made them is done, so a run
 * leaves nothing in /dev/shm: a file's folders once the file is done, even in a `--parallel`
 * worker that goes on to run other files (Bun kills it at the end, running no exit handler); a
 * process's folders once the process is gone.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { until } from '../support/wait.ts'

setDefaultTimeout(30_000)

const SUPPORT = join(import.meta.dir, '..', 'support')

/**
 * Six test files that each make a folder of the file and one of the process, and look at what
 * the files before them in the same process left. Two workers share six files, so one runs at
 * least three: a file's folders are checked while the process that made them runs on.
 */
const FILES = 6
function writeFixtureFiles(dir: string, record: string) {
  const body = `import { test } from 'bun:test'
import { appendFileSync, existsSync, readFileSync } from 'node:fs'
import { processScratchDir, scratchDir } from ${JSON.stringify(join(SUPPORT, 'scratch.ts'))}
test('makes folders and looks at those of the files before it', () => {
  const before = readFileSync(${JSON.stringify(record)}, 'utf8').split('\\n').filter(Boolean).map((line) => JSON.parse(line))
  const seen = before.filter((r) => r.pid === process.pid && r.file).map((r) => ({ fileFolderLeft: existsSync(r.file), processFolderLeft: existsSync(r.process) }))
  const made = { pid: process.pid, file: scratchDir('pigeonhole-scratch-check-'), process: processScratchDir('pigeonhole-scratch-check-') }
  appendFileSync(${JSON.stringify(record)}, JSON.stringify(made) + '\\n' + seen.map((s) => JSON.stringify(s) + '\\n').join(''))
})
`
  for (let i = 1; i <= FILES; i++) writeFileSync(join(dir, `file${i}.test.ts`), body)
  writeFileSync(record, '')
}

test("a file's folders go when it is done, its process's when the process is gone", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-scratch-test-'))
  try {
    const record = join(dir, 'record.jsonl')
    writeFixtureFiles(dir, record)
    // Two workers without isolation, as `bun test` runs the suite, with the preload bunfig.toml gives it.
    const files = Array.from({ length: FILES }, (_, i) => `./file${i + 1}.test.ts`)
    const run = Bun.spawnSync(
      [
        process.execPath,
        'test',
        '--parallel=2',
        '--no-isolate',
        '--preload',
        join(SUPPORT, 'file-cleanup.ts'),
        ...files,
      ],
      {
        cwd: dir,
        stdout: 'pipe',
        stderr: 'pipe',
      },
    )
    expect(run.exitCode, run.stderr.toString()).toBe(0)
    const lines = readFileSync(record, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    const made = lines.filter((line) => line.file)
    const seen = lines.filter((line) => !line.file)
    expect(made).toHaveLength(FILES)
    expect(seen.length).toBeGreaterThanOrEqual(2)
    for (const observed of seen) expect(observed).toEqual({ fileFolderLeft: false, processFolderLeft: true })
    // The workers were killed at the end of the run; their watchers remove the rest within a second or so.
    await until(
      () => made.every((m) => !existsSync(m.process) && !existsSync(m.file)),
      "the workers' watchers to remove their folders",
      { timeoutMs: 15_000 },
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
