/**
 * Admin CLI commands for what the console also does: the setup link, organisations with
 * their limits, keys, password resets and sign-outs. They write the same tables (and audit entries, with
 * the actor `cli`) as the console.
 */
import { createApiKey, revokeKey } from '../core/api-keys/keys.ts'
import { CLI_ACTOR } from '../core/audit/audit.ts'
import { Refusal } from '../core/common/refusals.ts'
import {
  changeLimits,
  createOrganization,
  organizationsNamed,
  organizationWithLimits,
  parseLimitInput,
} from '../core/organizations/organizations.ts'
import { setupToken, setupUrl } from '../core/users/setup.ts'
import { signOutEverywhere } from '../core/sessions/sessions.ts'
import { findUserByEmail, normaliseEmail, resetPassword } from '../core/users/users.ts'
import { ORG_LIMIT_INFO, ORG_LIMIT_NAMES, type OrgLimitName } from '../core/limits/organization-limits.ts'
import type { AccountServices } from '../core/common/services.ts'

/** What the entry (src/cli.ts) opens for a command: the account verbs' services, and how to stop with a message. */
export interface CliContext extends AccountServices {
  fail(message: string, code?: number): never
}

const FLAG_TO_LIMIT = new Map(ORG_LIMIT_NAMES.map((name) => [`--${ORG_LIMIT_INFO[name].flag}`, name]))

export async function printSetupLink(cli: CliContext): Promise<void> {
  const token = await setupToken(cli)
  if (!token)
    cli.fail('setup is done: a console user exists (sign in at /console; `users reset-password <email>` if locked out)')
  console.log('open this link once to create the first console user:')
  console.log(setupUrl(cli.config.baseUrl, token))
}

/**
 * `orgs create <name> [--local]`: prints the organisation id as the last line. A name already
 * in use is refused with the existing id, which is usually what a second run was after.
 */
export async function createOrg(cli: CliContext, args: string[]): Promise<void> {
  const local = args.includes('--local')
  const name = args.filter((arg) => arg !== '--local')[0]
  if (!name) cli.fail('usage: bun src/cli.ts orgs create <name> [--local]', 64)
  try {
    const existing = await organizationsNamed(cli, name)
    if (existing.length > 0) {
      const [first] = existing
      cli.fail(
        `An organization named "${first!.name}" already exists: ` +
          `${existing.map((org) => `${org.id} (created ${org.createdAt})`).join(', ')}.\n` +
          `Use its id (bun src/cli.ts keys create ${first!.id}), or choose another name.`,
      )
    }
    const org = await createOrganization(cli, CLI_ACTOR, { name, preset: local ? 'local' : 'hosted' })
    console.log(
      `created organization "${org.name}" with ${local ? 'local testing' : 'the LIMIT_* (hosted free plan)'} limits`,
    )
    console.log(org.id)
  } catch (error) {
    if (error instanceof Refusal) cli.fail(error.message)
    throw error
  }
}

/** `orgs limits <org-id> [--flag N]...`: sets the given limits ('default' follows LIMIT_*), then prints all of them. */
export async function orgLimitsCommand(cli: CliContext, args: string[]): Promise<void> {
  const [orgId, ...flags] = args
  if (!orgId)
    cli.fail(
      `usage: bun src/cli.ts orgs limits <org-id> ${[...FLAG_TO_LIMIT.keys()].map((f) => `[${f} N]`).join(' ')}`,
      64,
    )
  const input: Partial<Record<OrgLimitName, string>> = {}
  for (let i = 0; i < flags.length; i += 2) {
    const name = FLAG_TO_LIMIT.get(flags[i]!)
    if (!name || flags[i + 1] === undefined)
      cli.fail(`unknown option or missing value: ${flags[i]} (options: ${[...FLAG_TO_LIMIT.keys()].join(', ')})`, 64)
    input[name] = flags[i + 1]!
  }
  try {
    const overrides = parseLimitInput(input)
    await organizationWithLimits(cli, { organizationId: orgId })
    if (Object.keys(overrides).length > 0) await changeLimits(cli, CLI_ACTOR, { organizationId: orgId, overrides })
  } catch (error) {
    if (error instanceof Refusal)
      cli.fail(error.kind === 'not_found' ? `no organization with id ${orgId}` : error.message)
    throw error
  }
  const org = await organizationWithLimits(cli, { organizationId: orgId })
  console.log(`limits of "${org.name}" (${org.id}):`)
  for (const name of ORG_LIMIT_NAMES) {
    const source = org.overrides[name] === null ? 'LIMIT_* default' : 'set for this organization'
    console.log(`${ORG_LIMIT_INFO[name].flag}\t${org.limits[name]}\t${source}`)
  }
}

/** `users reset-password <email>`: prints a new password once, as the last line; the user's sessions end. */
export async function resetPasswordCommand(cli: CliContext, emailArg: string | undefined): Promise<void> {
  const email = normaliseEmail(emailArg)
  if (!email) cli.fail('usage: bun src/cli.ts users reset-password <email>', 64)
  const done = await resetPassword(cli, CLI_ACTOR, { email })
  if (!done) cli.fail(`no console user ${email}`)
  console.log(`new password for ${email} (shown once; every session of this user was ended):`)
  console.log(done.password)
}

/**
 * `users sign-out <email>`: ends every session of the user (a lost laptop, a session that
 * should not exist), audited as `cli`; prints how many ended. Their open live pages stop
 * before their next event.
 */
export async function signOutCommand(cli: CliContext, emailArg: string | undefined): Promise<void> {
  const email = normaliseEmail(emailArg)
  if (!email) cli.fail('usage: bun src/cli.ts users sign-out <email>', 64)
  const user = await findUserByEmail(cli, email)
  if (!user) cli.fail(`no console user ${email}`)
  const ended = await signOutEverywhere(cli, CLI_ACTOR, { user })
  console.log(`ended ${ended} session${ended === 1 ? '' : 's'} of ${email}`)
}

/** `keys create <org-id>`: a key of the organisation, audited as `cli`; the key itself is the last line. */
export async function createKeyCommand(cli: CliContext, orgId: string): Promise<void> {
  try {
    const created = await createApiKey(cli, CLI_ACTOR, { organizationId: orgId })
    console.log(`created key ${created.publicId}; store it now, it is not shown again:`)
    console.log(created.key)
  } catch (error) {
    if (error instanceof Refusal && error.kind === 'not_found') cli.fail(`no organization with id ${orgId}`)
    throw error
  }
}

/** `keys revoke <key-or-public-id>`: any organisation's key, audited as `cli` in its log. */
export async function revokeKeyCommand(cli: CliContext, keyOrPublicId: string): Promise<void> {
  try {
    await revokeKey(cli, CLI_ACTOR, { keyOrPublicId })
  } catch (error) {
    if (error instanceof Refusal && error.kind === 'not_found') cli.fail(`no key ${keyOrPublicId}`)
    throw error
  }
  console.log('revoked')
}
