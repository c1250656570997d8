/**
 * Every console URL, defined once: the pattern the router matches and the link builder
 * pages and redirects use. A `:name` segment matches one path segment; `link` fills the
 * names in the order they appear, each value percent-encoded, so a page can never build a
 * path the router would read differently.
 */

/** The `:name` segments of a pattern, in order (`'/a/:org/b/:inbox'` gives `['org', 'inbox']`). */
type PathParams<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? [Name, ...PathParams<`/${Rest}`>]
  : P extends `${string}:${infer Name}`
    ? [Name]
    : []

/** One name per `:name` segment of the pattern. */
export type ParamName<P extends string> = PathParams<P>[number]

/** A string for each name (a mapped type over a type parameter keeps the tuple's length). */
type ValuesFor<Names extends string[]> = { [K in keyof Names]: string }

export interface ConsolePath<P extends string = string> {
  readonly pattern: P
  link(...values: ValuesFor<PathParams<P>>): string
}

/** Names in a pattern are lower-case letters; the router reads them with the same expression. */
export const PARAM = /:([a-z]+)/g

function path<const P extends string>(pattern: P): ConsolePath<P> {
  return {
    pattern,
    link: (...values: string[]) => {
      let next = 0
      return pattern.replace(PARAM, () => encodeURIComponent(values[next++]!))
    },
  }
}

export const PATHS = {
  home: path('/console'),
  setup: path('/setup'),
  signIn: path('/console/sign-in'),
  signOut: path('/console/sign-out'),
  stylesheet: path('/console/assets/console.css'),
  script: path('/console/assets/console.js'),
  liveWorker: path('/console/assets/live-worker.js'),
  live: path('/console/live'),

  account: path('/console/account'),
  accountPassword: path('/console/account/password'),
  accountTheme: path('/console/account/theme'),
  accountSignOutEverywhere: path('/console/account/sessions/revoke'),

  invite: path('/console/invites/:token'),

  organization: path('/console/orgs/:org'),
  /** After setup: the first key (shown once) and the first steps. */
  welcome: path('/console/orgs/:org/welcome'),
  search: path('/console/orgs/:org/search'),
  inboxes: path('/console/orgs/:org/inboxes'),
  /** The list's delete button: the inbox id is the button's value, not part of the path. */
  inboxesDelete: path('/console/orgs/:org/inboxes/delete-inbox'),
  inbox: path('/console/orgs/:org/inboxes/:inbox'),
  inboxDeleteMessage: path('/console/orgs/:org/inboxes/:inbox/delete-message'),
  inboxEmpty: path('/console/orgs/:org/inboxes/:inbox/empty'),
  /** The list's bulk buttons (mark read or unread, delete) over the ticked messages. */
  inboxBulk: path('/console/orgs/:org/inboxes/:inbox/bulk'),
  inboxDelete: path('/console/orgs/:org/inboxes/:inbox/delete'),
  inboxEvents: path('/console/orgs/:org/inboxes/:inbox/events'),
  message: path('/console/orgs/:org/messages/:message'),
  messageCheckLinks: path('/console/orgs/:org/messages/:message/check-links'),
  /** A kept link check's result (a GET: shareable; Back and reload never run it again). */
  messageLinkCheck: path('/console/orgs/:org/messages/:message/link-checks/:check'),
  messageHtml: path('/console/orgs/:org/messages/:message/html'),
  messageHtmlCheck: path('/console/orgs/:org/messages/:message/html-check'),
  messageSpamCheck: path('/console/orgs/:org/messages/:message/spam-check'),
  messageSource: path('/console/orgs/:org/messages/:message/source'),
  messageRaw: path('/console/orgs/:org/messages/:message/raw'),
  messageDelete: path('/console/orgs/:org/messages/:message/delete'),
  attachment: path('/console/orgs/:org/attachments/:attachment'),

  members: path('/console/orgs/:org/members'),
  memberRole: path('/console/orgs/:org/members/:user/role'),
  memberRemove: path('/console/orgs/:org/members/:user/remove'),
  invites: path('/console/orgs/:org/invites'),
  inviteCreated: path('/console/orgs/:org/invites/created'),
  inviteWithdraw: path('/console/orgs/:org/invites/:invite/withdraw'),
  keys: path('/console/orgs/:org/keys'),
  keyRevoke: path('/console/orgs/:org/keys/:key/revoke'),
  audit: path('/console/orgs/:org/audit'),

  admin: path('/console/admin'),
  adminOrganizations: path('/console/admin/orgs'),
  adminOrganization: path('/console/admin/orgs/:org'),
  adminJoin: path('/console/admin/orgs/:org/join'),
  adminLimits: path('/console/admin/orgs/:org/limits'),
  adminResetPassword: path('/console/admin/users/:user/reset-password'),
  adminPasswordReset: path('/console/admin/password-reset'),
  adminSignOutEverywhere: path('/console/admin/users/:user/revoke-sessions'),
} as const

/** `path?name=value&...` with each value percent-encoded; undefined values are left out. */
export function withQuery(path: string, query: Record<string, string | number | undefined>): string {
  const pairs = Object.entries(query).filter((pair): pair is [string, string | number] => pair[1] !== undefined)
  if (pairs.length === 0) return path
  return `${path}?${pairs.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&')}`
}

/**
 * No id, token or watch key holds a control character. PostgreSQL refuses a NUL in a text
 * parameter outright (an error, not "no such row"), so such a value never reaches a query.
 */
export const hasControlCharacter = (value: string): boolean => /\p{Cc}/u.test(value)
