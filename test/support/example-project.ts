/**
 * The examples as a user gets them: a new project folder, into which the examples are copied
 * exactly as README.md says, and from whose root the user's own command runs. Used by
 * test/examples/examples.copied-layout.test.ts and scripts/run-examples.ts (which adds the
 * browser run).
 */
import { readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { scratchDir } from './scratch.ts'

const ROOT = join(import.meta.dir, '..', '..')

export interface ExampleProject {
  dir: string
  cleanup(): void
}

/**
 * A project as `npm init -y` leaves it (CommonJS, no config of its own) after
 * `npm install -D @playwright/test`: this checkout's node_modules stands for the installed one.
 */
export function newProject(): ExampleProject {
  const dir = scratchDir('pigeonhole-user-project-')
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'my-app', version: '1.0.0', main: 'index.js', type: 'commonjs' }, null, 2)}\n`,
  )
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** The shell lines of the README block marked `<!-- copy: name -->`, with path/to/pigeonhole as this checkout. */
export function readmeCopySteps(name: string): string {
  const block = new RegExp(`<!-- copy: ${name} -->\\n( *)\`\`\`sh\\n([\\s\\S]*?)\\n *\`\`\`\\n`).exec(
    readFileSync(join(ROOT, 'README.md'), 'utf8'),
  )
  if (!block) throw new Error(`README.md has no <!-- copy: ${name} --> block`)
  const indent = block[1]!.length
  return block[2]!
    .split('\n')
    .map((line) => line.slice(indent))
    .join('\n')
    .replaceAll('path/to/pigeonhole', ROOT)
}

/** Runs those lines in the project's root with a POSIX shell, as a user pastes them. */
export function copyAsReadmeSays(project: ExampleProject, name: string): void {
  const run = Bun.spawnSync(['sh', '-e', '-c', readmeCopySteps(name)], {
    cwd: project.dir,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (run.exitCode !== 0) throw new Error(`README.md's ${name} copy steps failed: ${run.stderr.toString()}`)
}
