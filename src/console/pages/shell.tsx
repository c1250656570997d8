/** @jsxImportSource preact */
/**
 * The page frame every console page uses: header with the organisation switcher and the
 * account menu, the organisation's section navigation, and the CSRF-carrying form. Text
 * is rendered by preact-render-to-string, which escapes every string and attribute.
 */
import { createContext, type ComponentChildren } from 'preact'
import { useContext } from 'preact/hooks'
import type { Membership } from '../../core/organizations/organizations.ts'
import type { User } from '../../core/users/users.ts'
import { CSRF_FIELD } from '../csrf.ts'
import { PATHS } from '../paths.ts'

export interface Shell {
  user: User | null
  /** The token forms on this page repeat (PostForm adds it). */
  csrf: string
  memberships: Membership[]
  /** The organisation this page belongs to, when it belongs to one. */
  org?: Membership
  /** Which entry of ORG_SECTIONS is current. */
  section?: string
  /** The theme chosen in this browser (cookies.ts); absent or `system`: the system's. */
  theme?: 'light' | 'dark' | 'system'
}

export const ShellContext = createContext<Shell>({ user: null, csrf: '', memberships: [] })
const useShell = () => useContext(ShellContext)

/**
 * The organisation's sections, in navigation order. A new section is one entry here plus
 * its pattern in src/console/paths.ts and its route in src/console/routes/ (registered in
 * src/console/index.ts).
 */
const ORG_SECTIONS: {
  id: string
  label: string
  path: { link(organizationId: string): string }
  ownersOnly?: boolean
}[] = [
  { id: 'overview', label: 'Overview', path: PATHS.organization },
  { id: 'inboxes', label: 'Inboxes', path: PATHS.inboxes },
  { id: 'members', label: 'Members', path: PATHS.members },
  { id: 'keys', label: 'API keys', path: PATHS.keys },
  { id: 'audit', label: 'Audit log', path: PATHS.audit, ownersOnly: true },
]

/** A POST form with the CSRF token; `confirm` asks before submitting (console.js). */
export function PostForm(props: {
  action: string
  children: ComponentChildren
  confirm?: string
  class?: string
  id?: string
}) {
  const { csrf } = useShell()
  return (
    <form method="post" action={props.action} class={props.class} id={props.id} data-confirm={props.confirm}>
      <input type="hidden" name={CSRF_FIELD} value={csrf} />
      {props.children}
    </form>
  )
}

/**
 * A table with one header row; `false` leaves a column out, an empty heading tops a column
 * of actions (named for screen readers only). The wrapper scrolls a table that cannot fit
 * a phone's width, so the page itself never scrolls sideways.
 */
export function Table(props: { columns: Array<string | false>; class?: string; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table class={props.class}>
        <thead>
          <tr>
            {props.columns.map(
              (column) =>
                column !== false && <th scope="col">{column || <span class="visually-hidden">Actions</span>}</th>,
            )}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  )
}

/** A value shown once (a key, a link, a password) with a copy button. */
export function CopyField(props: { value: string; label: string; id: string }) {
  return (
    <div class="copy-field">
      <label for={props.id}>{props.label}</label>
      <div class="copy-row">
        <input id={props.id} type="text" readonly value={props.value} class="mono" />
        <button type="button" class="button" data-copy={props.id}>
          Copy
        </button>
      </div>
    </div>
  )
}

/** Where a shown-once value was: after its time, or in another session, it is gone for good. */
export function ShownValueGone(props: { what: string; back: string }) {
  return (
    <section class="card narrow">
      <h2>No longer shown</h2>
      <p class="notice">
        The {props.what} is no longer shown: it is held for 10 minutes, in the browser session that made it. If it was
        not copied, make a new one.
      </p>
      <p>
        <a href={props.back}>Back</a>
      </p>
    </section>
  )
}

/** A time to the second (25 test mails in one minute must not look alike), in UTC. */
const exactTime = (at: string) => `${at.replace('T', ' ').slice(0, 19)} UTC`

/**
 * A time to the second; console.js shows one from the last 24 hours as "12 s ago" and
 * puts the exact time in its title (hover). Without the script the exact time stays.
 */
export const Time = ({ at }: { at: string | null | undefined }) =>
  at ? <time datetime={at}>{exactTime(at)}</time> : <span class="muted">never</span>

function Header({ shell }: { shell: Shell }) {
  const brand = (
    <a class="brand" href={PATHS.home.link()}>
      Pigeonhole
    </a>
  )
  return (
    <div class="top">
      {/* A page outside an organisation has the product as its one h1 (an organisation's page, the organisation). */}
      {shell.org ? brand : <h1 class="brand-heading">{brand}</h1>}
      {shell.user && shell.memberships.length > 0 && (
        <nav class="orgs" aria-label="Organisations">
          {shell.memberships.map((m) => (
            <a
              href={PATHS.organization.link(m.organizationId)}
              aria-current={shell.org?.organizationId === m.organizationId ? 'page' : undefined}
            >
              {m.name}
            </a>
          ))}
        </nav>
      )}
      {shell.user && (
        <div class="account">
          {shell.user.isOperator && <a href={PATHS.admin.link()}>Operator</a>}
          <a href={PATHS.account.link()} class="account-email">
            {shell.user.email}
          </a>
          <PostForm action={PATHS.signOut.link()} class="inline">
            <button type="submit" class="sign-out">
              Sign out
            </button>
          </PostForm>
        </div>
      )}
    </div>
  )
}

function OrgNav({ org, section }: { org: Membership; section?: string }) {
  return (
    <nav class="sections" aria-label="Sections">
      {ORG_SECTIONS.filter((s) => !s.ownersOnly || org.role === 'owner').map((s) => (
        <a href={s.path.link(org.organizationId)} aria-current={s.id === section ? 'page' : undefined}>
          {s.label}
        </a>
      ))}
    </nav>
  )
}

export function Layout(props: { shell: Shell; title: string; children: ComponentChildren }) {
  const { shell } = props
  return (
    // The theme chosen on the account page; without one the stylesheet follows the system.
    <html lang="en" data-theme={shell.theme && shell.theme !== 'system' ? shell.theme : undefined}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · Pigeonhole`}</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href={PATHS.stylesheet.link()} />
        <script src={PATHS.script.link()} defer></script>
      </head>
      <body>
        <ShellContext.Provider value={shell}>
          <a class="skip-link" href="#main">
            Skip to content
          </a>
          <header>
            <Header shell={shell} />
            {shell.org && (
              <div class="org-bar">
                <h1 class="org-name">{shell.org.name}</h1>
                <OrgNav org={shell.org} section={shell.section} />
              </div>
            )}
          </header>
          <main id="main" tabindex={-1}>
            {props.children}
          </main>
        </ShellContext.Provider>
      </body>
    </html>
  )
}
