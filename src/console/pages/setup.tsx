/** @jsxImportSource preact */
/** /setup: the first-run form, and the page that shows the first key once. */
import {
  ORG_LIMIT_INFO,
  ORG_LIMIT_NAMES,
  LOCAL_TESTING_LIMITS,
  type OrgLimits,
} from '../../core/limits/organization-limits.ts'
import { MIN_PASSWORD_LENGTH } from '../../core/users/users.ts'
import { PATHS } from '../paths.ts'
import { CopyField, PostForm } from './shell.tsx'

/** A server on this machine most likely serves one developer's tests: suggest "local testing" there. */
export const suggestedPreset = (baseUrl: string): 'hosted' | 'local' =>
  /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:|\/|$)/.test(baseUrl) ? 'local' : 'hosted'

export function LimitPresetChoice({ defaults, suggested }: { defaults: OrgLimits; suggested: 'hosted' | 'local' }) {
  const local = {
    ...LOCAL_TESTING_LIMITS,
    monthlyEmails: LOCAL_TESTING_LIMITS.monthlyEmails.toLocaleString('en'),
    inboxBurst: LOCAL_TESTING_LIMITS.inboxBurst.toLocaleString('en'),
  }
  return (
    <fieldset class="presets">
      <legend>Limits for this organisation</legend>
      <label class="choice">
        <input type="radio" name="preset" value="hosted" checked={suggested === 'hosted'} />
        <span>
          <strong>Hosted free plan</strong>: the server's LIMIT_* values ({defaults.activeInboxes} inboxes,{' '}
          {defaults.monthlyEmails} emails a month, {defaults.inboxBurst} per inbox per 5 minutes). Right for a shared or
          public instance.
        </span>
      </label>
      <label class="choice">
        <input type="radio" name="preset" value="local" checked={suggested === 'local'} />
        <span>
          <strong>Local testing</strong>: limits that never lock you out ({local.monthlyEmails} emails a month,{' '}
          {local.inboxBurst} per 5 minutes, {local.activeInboxes} inboxes). Right for your own machine or CI.
        </span>
      </label>
    </fieldset>
  )
}

export function SetupForm(props: {
  token: string
  defaults: OrgLimits
  suggested: 'hosted' | 'local'
  error?: string
  email?: string
  organization?: string
}) {
  return (
    <section class="card narrow">
      <h2>Set up Pigeonhole</h2>
      <p class="muted">
        Create the operator account, the first organisation and its first API key. This link works once.
      </p>
      {props.error && <p class="error">{props.error}</p>}
      <PostForm action={PATHS.setup.link()}>
        <input type="hidden" name="token" value={props.token} />
        <label for="email">Your email</label>
        <input id="email" name="email" type="email" required autocomplete="username" value={props.email} />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          required
          minLength={MIN_PASSWORD_LENGTH}
          autocomplete="new-password"
        />
        <p class="muted">At least {MIN_PASSWORD_LENGTH} characters.</p>
        <label for="organization">Organisation name</label>
        <input
          id="organization"
          name="organization"
          type="text"
          required
          maxLength={100}
          value={props.organization ?? 'My team'}
        />
        <LimitPresetChoice defaults={props.defaults} suggested={props.suggested} />
        <div class="form-actions">
          <button type="submit">Create account, organisation and key</button>
        </div>
      </PostForm>
    </section>
  )
}

/** What a newcomer needs next: the key (once), and the commands that use it. */
/** The page setup redirects to: the first key while this session may still see it (10 minutes), and the first steps. */
export function FirstSteps(props: {
  organizationId: string
  apiKey: string | undefined
  baseUrl: string
  smtpHint: string
}) {
  return (
    <>
      <section class="card">
        {props.apiKey ? (
          <>
            <p class="notice">
              Copy this key now: only its hash is stored, and it is not shown again after 10 minutes or outside this
              browser session.
            </p>
            <CopyField id="api-key" label="Your API key" value={props.apiKey} />
          </>
        ) : (
          <p class="notice">
            The first API key is no longer shown: it is held for 10 minutes, in the browser session that made it. If it
            was not copied, make a new one under <a href={PATHS.keys.link(props.organizationId)}>API keys</a>.
          </p>
        )}
      </section>
      <section class="card">
        <h2>Try it</h2>
        <p>
          Create an inbox, send it mail over SMTP with curl, and read it back (the last line is the status: 200, or 204
          if no mail came):
        </p>
        <pre id="try-it">
          {`KEY=${props.apiKey ?? '<your API key>'}
H="Authorization: Bearer $KEY"
INBOX=$(curl -s -X POST ${props.baseUrl}/v1/inboxes -H "$H")
ID=$(echo "$INBOX" | sed -n 's/.*"id":"\\([^"]*\\)".*/\\1/p')
ADDRESS=$(echo "$INBOX" | sed -n 's/.*"address":"\\([^"]*\\)".*/\\1/p')
printf 'Subject: Hello\\r\\n\\r\\nIt works.\\r\\n' | curl -s smtp://${props.smtpHint} ` +
            `--mail-from app@example.com --mail-rcpt "$ADDRESS" -T -
curl -s -w '\\n%{http_code}\\n' "${props.baseUrl}/v1/inboxes/$ID/messages?wait_seconds=30&limit=1&include=content" ` +
            `-H "$H"`}
        </pre>
        <p>
          Or open <strong>Inboxes</strong>, create one, and run the curl or swaks line its page shows; the message
          appears there as it arrives.
        </p>
        <p class="actions">
          <a class="button" href={PATHS.inboxes.link(props.organizationId)}>
            Create an inbox and watch its mail
          </a>{' '}
          <a class="button secondary" href={PATHS.organization.link(props.organizationId)}>
            Open the organisation
          </a>
        </p>
      </section>
    </>
  )
}

export const limitRows = (limits: OrgLimits) =>
  ORG_LIMIT_NAMES.map((name) => ({ name, label: ORG_LIMIT_INFO[name].label, value: limits[name] }))
