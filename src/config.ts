/**
 * The operational contract: every environment variable the product reads, with its
 * default and meaning, declared once here. The Config and Limits types are derived from
 * this list, the values are parsed once at boot, and docs/configuration.md's table is
 * printed from it (`bun run docs:config`), so none of them can drift apart.
 */
import { parseAllowList } from './core/messages/allow-list.ts'
import {
  ConfigError,
  exitOnConfigError,
  parseSettings,
  type Setting,
  settingsTable,
  type ValueOf,
} from './config-kinds.ts'
import { TrustedNetworks } from './core/common/trusted-networks.ts'

/** A URL that selects PostgreSQL: what DATABASE_URL and `cli db copy --to` accept. */
/**
 * Why `value` is not a PostgreSQL URL the client reads as meant, or null when it is. A user
 * name or password may hold spaces (raw or as %20, both read as a space); '/', '?', '#' and
 * '%' there must be percent-encoded, since the client reads the host after the first '/' or
 * '?' and decodes every '%'. The host and database part holds no whitespace.
 */
export function postgresUrlProblem(value: string): string | null {
  const scheme = /^postgres(ql)?:\/\//.exec(value)
  if (!scheme) return 'expected a postgres:// or postgresql:// URL'
  const rest = value.slice(scheme[0].length)
  const at = rest.lastIndexOf('@')
  const credentials = at < 0 ? '' : rest.slice(0, at)
  const place = rest.slice(at + 1)
  if (/[/?#]/.test(credentials)) return "percent-encode '/', '?' and '#' in the user name and password (%2F, %3F, %23)"
  if (/%(?![0-9a-fA-F]{2})/.test(credentials)) return "percent-encode '%' in the user name and password as %25"
  if (place === '' || /^[/?]/.test(place) || /\s/.test(place))
    return 'expected a host (and no spaces) after the user name and password'
  if (!URL.canParse(value)) return 'the URL cannot be read'
  return null
}

const isPostgresUrl = (value: string): boolean => postgresUrlProblem(value) === null

export { ConfigError, exitOnConfigError } from './config-kinds.ts'

const MiB = 1024 * 1024
const port = { type: 'int', min: 0, max: 65535 } as const
const positive = (max = 1_000_000_000) => ({ type: 'int', min: 1, max }) as const

export const SETTINGS = [
  { env: 'PORT', key: 'port', kind: port, default: '3000', description: 'HTTP port (0 asks the OS for a free one).' },
  {
    env: 'SMTP_PORT',
    key: 'smtpPort',
    kind: port,
    default: '2525',
    description: 'SMTP port. Fly maps public port 25 to it.',
  },
  {
    env: 'HOST',
    key: 'host',
    kind: { type: 'string' },
    default: '0.0.0.0',
    description: 'Bind address for both listeners.',
  },
  {
    env: 'DATABASE_PATH',
    key: 'databasePath',
    kind: { type: 'string' },
    default: './data/pigeonhole.db',
    description:
      'SQLite file; its folder is created. With DATABASE_URL set, ' +
      'only the spool of mail being parsed lives in this folder.',
  },
  {
    env: 'DATABASE_URL',
    key: 'databaseUrl',
    kind: { type: 'string' },
    default: '',
    description:
      'Empty: one server on the SQLite file at DATABASE_PATH. `postgres://…` or `postgresql://…`: PostgreSQL ' +
      'mode, any number of machines on one database (docs/scaling.md); migrated at start under an advisory lock.',
  },
  {
    env: 'DATABASE_POOL_SIZE',
    key: 'databasePoolSize',
    kind: positive(200),
    default: '10',
    description:
      "PostgreSQL mode: connections this machine's pool opens at most (plus one for " +
      "LISTEN). Keep the sum over machines under the server's `max_connections`.",
  },
  {
    env: 'DATABASE_STATEMENT_TIMEOUT_MS',
    key: 'databaseStatementTimeoutMs',
    kind: { type: 'int', min: 0, max: 600_000 },
    default: '10000',
    description:
      "PostgreSQL mode: the server's `statement_timeout` on this machine's pool (no statement of ours " +
      'legitimately runs longer), and the bound on a database that goes silent: a statement that hears ' +
      'nothing for this long plus 2 s has its connection closed and fails as an outage (SMTP 451, API 503). ' +
      'The start-up migration and `cli db copy` are not bound. 0 turns both off (a statement sent to a silent ' +
      'database then waits for the OS to give its connection up: minutes); see docs/scaling.md for poolers.',
  },
  {
    env: 'DATABASE_WAKE_PUBLISH',
    key: 'databaseWakePublish',
    kind: { type: 'enum', values: ['on', 'off'] },
    default: 'on',
    description:
      "PostgreSQL mode: `on` publishes this machine's stored messages to the other machines after each " +
      'commit, coalesced (one NOTIFY for many inboxes every few milliseconds), so a long poll on another ' +
      'machine answers within milliseconds; only for inboxes another machine has announced a waiter on (every ' +
      'machine announces its watched inboxes on the same channel, at the first waiter and once a second), and ' +
      'for everything during the 1.5 s after its LISTEN connection (re)starts. ' +
      "`off` publishes nothing: the other machines' waiters then hear a " +
      "message by their once-a-second re-check. For measuring (the bench's wake-ups off), not for production.",
  },
  {
    env: 'RECEIVING_DOMAIN',
    key: 'receivingDomain',
    kind: { type: 'string', pattern: /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i, hint: 'a bare domain name' },
    default: 'pigeonhole.test',
    // A reserved .test name (RFC 2606): never a real domain, yet email validators accept it (most refuse @localhost).
    description:
      'Inbox addresses are `<local_part>@RECEIVING_DOMAIN`. The ' +
      'default is a reserved `.test` name that sign-up forms accept.',
  },
  {
    env: 'BASE_URL',
    key: 'baseUrl',
    kind: { type: 'url' },
    default: { from: (c) => `http://localhost:${c.port}`, shown: 'http://localhost:PORT' },
    description: 'Public URL of the API.',
  },
  {
    env: 'HSTS_MAX_AGE_SECONDS',
    key: 'hstsMaxAgeSeconds',
    kind: { type: 'int', min: 0, max: 63_072_000 },
    default: '31536000',
    description:
      'When `BASE_URL` is https: `max-age` of the `Strict-Transport-Security` header on every API and ' +
      'console response (one year by default; no `includeSubDomains`, no `preload`; docs/operations.md ' +
      'says why). 0 tells browsers to forget an earlier one. Not sent when `BASE_URL` is http.',
  },
  {
    env: 'FILES_URL',
    key: 'filesUrl',
    kind: { type: 'url' },
    default: { from: (c) => String(c.baseUrl), shown: 'BASE_URL' },
    description: 'Public URL used in attachment `download_url`s.',
  },
  {
    env: 'EMAIL_ROUTING',
    key: 'emailRouting',
    kind: { type: 'enum', values: ['none', 'cloudflare'] },
    default: 'none',
    description: 'Routing provider: `none` (this SMTP listener is the MX) or `cloudflare`.',
  },
  {
    env: 'CLOUDFLARE_API_TOKEN',
    key: 'cloudflareApiToken',
    kind: { type: 'string' },
    default: '',
    description: 'API token with Email Routing rules edit permission (for `cloudflare`).',
  },
  {
    env: 'CLOUDFLARE_ZONE_ID',
    key: 'cloudflareZoneId',
    kind: { type: 'string' },
    default: '',
    description: 'Zone id of `RECEIVING_DOMAIN` (for `cloudflare`).',
  },
  {
    env: 'CLOUDFLARE_API_BASE',
    key: 'cloudflareApiBase',
    kind: { type: 'url' },
    default: 'https://api.cloudflare.com/client/v4',
    description: 'Cloudflare API base; tests point it at a local fake.',
  },
  {
    env: 'CLOUDFLARE_RULE_ACTION',
    key: 'cloudflareRuleAction',
    kind: { type: 'enum', values: ['worker', 'forward'] },
    default: 'worker',
    description:
      'Action of each inbox rule: `worker` hands the mail to an Email Worker (which relays ' +
      'it to this SMTP listener), `forward` sends it to a verified destination address.',
  },
  {
    env: 'CLOUDFLARE_RULE_DESTINATION',
    key: 'cloudflareRuleDestination',
    kind: { type: 'string', pattern: /^[^\s,]+$/, hint: 'one Worker name or one email address' },
    default: 'pigeonhole-relay',
    description: "The Email Worker's name (action `worker`) or the verified destination address (action `forward`).",
  },
  {
    env: 'CLOUDFLARE_TIMEOUT_MS',
    key: 'cloudflareTimeoutMs',
    // Bounded, because the key of a createInbox waiting on this call answers
    // idempotency_in_progress until it returns: two attempts of at most 30 s each.
    kind: { type: 'int', min: 100, max: 30_000 },
    default: '5000',
    description: 'Time allowed for one Cloudflare API call; a timed-out or failed call is retried once.',
  },
  {
    env: 'CORS_CONSOLE_ORIGIN',
    key: 'corsConsoleOrigin',
    kind: {
      type: 'string',
      pattern: /^(https?:\/\/[^/*\s]+)?$/,
      hint: 'an origin such as https://console.example.com',
    },
    default: '',
    description: 'Origin of the web console allowed by CORS (empty: none).',
  },
  {
    env: 'CORS_WILDCARD_ORIGIN',
    key: 'corsWildcardOrigin',
    kind: {
      type: 'string',
      pattern: /^(https?:\/\/\*\.[^/*\s]+)?$/,
      hint: 'an origin pattern such as https://*.preview.example.com',
    },
    default: '',
    description: 'One wildcard host family allowed by CORS (empty: none).',
  },
  {
    env: 'HTTP_BODY_TIMEOUT_MS',
    key: 'httpBodyTimeoutMs',
    kind: { type: 'int', min: 100, max: 120_000 },
    default: '10000',
    description:
      'Time allowed to receive a request body, in all (not per byte); a slower one gets `408 request_timeout`.',
  },
  {
    env: 'HTTP_IDLE_TIMEOUT_SECONDS',
    key: 'httpIdleTimeoutSeconds',
    kind: { type: 'int', min: 1, max: 255 },
    default: '255',
    description:
      "Seconds an HTTP connection may stay silent before it is closed (255 is Bun's most; Bun " +
      'checks about every 4 s). It applies while a request is handled too, so it must cover ' +
      '`HTTP_BODY_TIMEOUT_MS` and, with Cloudflare routing, two `CLOUDFLARE_TIMEOUT_MS` and a ' +
      'second. A long poll and a console live stream keep their connection open past it.',
  },
  {
    env: 'CONSOLE_SESSION_DAYS',
    key: 'consoleSessionDays',
    kind: positive(365),
    default: '14',
    description: 'Days a console sign-in lasts without use; each use past half of it extends it again.',
  },
  {
    env: 'CONSOLE_LINK_CHECK',
    key: 'consoleLinkCheck',
    kind: { type: 'enum', values: ['auto', 'on', 'off'] },
    default: 'auto',
    description:
      "Whether the mail viewer may check a message's links and images (a HEAD request from this server, " +
      'public addresses only unless `CONSOLE_LINK_CHECK_ALLOW` names more, redirects followed up to 5 ' +
      'hops, 3 s a request). `auto`: on when `BASE_URL` is localhost, off on a public deployment.',
  },
  {
    env: 'CONSOLE_LINK_CHECK_ALLOW',
    key: 'consoleLinkCheckAllow',
    // Checked entry by entry by core/messages/allow-list.ts at start-up (config's own check is the shape).
    kind: {
      type: 'string',
      pattern: /^[^\s]*$/,
      hint: 'entries such as localhost:3000,10.0.0.0/8,[::1]:*,*.staging.internal, without spaces',
    },
    default: '',
    description:
      'What the link check may reach beyond public addresses, comma-separated: host ' +
      'names (`localhost`, `*.staging.internal`), IPv4 ranges (`127.0.0.0/8`), IPv6 ' +
      'ranges in brackets (`[::1]`), each optionally with ports (`:3000`, `:3000-3999`, ' +
      '`:*`; without, 80, 443, 8080 and 8443). Empty: nothing beyond the public internet.',
  },
  {
    env: 'CONSOLE_SPAM_CHECK',
    key: 'consoleSpamCheck',
    kind: {
      type: 'string',
      pattern: /^(off|rspamd:https?:\/\/[^\s/]+\/?|spamd:(\[[0-9a-fA-F:]+\]|[\w.-]+):\d{1,5})$/,
      hint:
        'off, rspamd: and the URL of its normal worker (rspamd:http://127.0.0.1:11333), ' +
        'or spamd: and its host:port (spamd:127.0.0.1:783)',
    },
    default: 'off',
    description:
      "The mail viewer's spam check: `off`; `rspamd:` and the URL of an rspamd normal worker " +
      'the operator runs (its HTTP interface, `/checkv2`); or `spamd:` and the `host:port` of ' +
      "SpamAssassin's spamd (the spamc protocol). The message's raw source is sent there when " +
      "someone opens a message's spam check; the score and the rules that fired are shown.",
  },
  {
    env: 'CONSOLE_PASSWORD_MEMORY_KIB',
    key: 'consolePasswordMemoryKib',
    // 8 is argon2's floor; past 1 GiB, four checks in flight would need 4 GiB.
    kind: { type: 'int', min: 8, max: 1_048_576 },
    default: '65536',
    description:
      'Memory cost (KiB) of the argon2id hash of console passwords set from now on (setup, invites, password ' +
      'changes and resets, also by the CLI). Existing hashes keep the cost they were made with and still verify. ' +
      "The default is Bun's (64 MiB, about 0.1 s per check); up to four checks run at once. A lower value suits " +
      "a small machine (19456, OWASP's minimum, is about 0.03 s); values far below that are for test setups only.",
  },
  {
    env: 'CLIENT_ADDRESS_HEADER',
    key: 'clientAddressHeader',
    kind: { type: 'string', pattern: /^([A-Za-z0-9-]+)?$/, hint: 'a header name such as Fly-Client-IP' },
    default: '',
    description:
      'Header that carries the client address when a proxy stands in front (Fly: ' +
      "`Fly-Client-IP`); empty uses the connection's address. The console throttles sign-ins " +
      'and writes audit entries by it. Believed only from a peer in `TRUSTED_PROXIES` and only ' +
      "when it holds one IPv4 or IPv6 address; otherwise the connection's address is used.",
  },
  {
    env: 'TRUSTED_PROXIES',
    key: 'trustedProxies',
    // Checked whole in checkCombinations, which names the bad entry.
    kind: { type: 'string' },
    // One private IPv4 network. Fly's docs say only that its proxy reaches a machine over a
    // private IPv4 address, so fly.toml names all three RFC 1918 networks itself; a narrower
    // default trusts fewer neighbours elsewhere (docs/operations.md, "Trusted networks"). The
    // 6PN (fdaa::/16) is never meant: every machine of the organisation can connect over it.
    default: '172.16.0.0/12',
    description:
      'Comma-separated networks (CIDR, IPv4 or IPv6; a bare address is one host) of the proxies in front of ' +
      'this server. Only a peer in them may send a PROXY line (`SMTP_PROXY_PROTOCOL`) or set ' +
      '`CLIENT_ADDRESS_HEADER`; any other peer is counted, throttled and logged by its own address. The ' +
      "default is one private IPv4 network; `fly.toml` sets the three private IPv4 networks, since Fly's " +
      'proxy connects over a private IPv4 address. A PROXY line refused from a peer outside them is counted, ' +
      'warned about and fails `/ready` when no line is accepted (docs/operations.md). `none`: trust no one ' +
      '(refused at start while `SMTP_PROXY_PROTOCOL` is `on` or `CLIENT_ADDRESS_HEADER` is set).',
  },
  {
    env: 'LOG_LEVEL',
    key: 'logLevel',
    kind: { type: 'enum', values: ['debug', 'info', 'warn', 'error', 'silent'] },
    default: 'info',
    description: 'Lowest level written to stdout as JSON lines.',
  },
  {
    env: 'LIMIT_ACTIVE_INBOXES',
    key: 'activeInboxes',
    group: 'limits',
    kind: positive(),
    default: '11',
    description:
      'Active inboxes per organisation; the default for organisations ' +
      'without their own (console or `cli orgs limits`).',
  },
  {
    env: 'LIMIT_MONTHLY_EMAILS',
    key: 'monthlyEmails',
    group: 'limits',
    kind: positive(),
    default: '33',
    description:
      'Inbound emails per organisation per UTC month; the default for ' +
      'organisations without their own (console or `cli orgs limits`).',
  },
  {
    env: 'LIMIT_REQUESTS_PER_KEY',
    key: 'requestsPerKey',
    group: 'limits',
    kind: positive(),
    default: '120',
    description:
      'HTTP requests per key per UTC minute; the default for ' +
      'organisations without their own (console or `cli orgs limits`).',
  },
  {
    env: 'LIMIT_REQUESTS_PER_ORG',
    key: 'requestsPerOrg',
    group: 'limits',
    kind: positive(),
    default: '600',
    description:
      'HTTP requests per organisation per UTC minute; the default for ' +
      'organisations without their own (console or `cli orgs limits`).',
  },
  {
    env: 'LIMIT_LONG_POLLS_PER_KEY',
    key: 'longPollsPerKey',
    group: 'limits',
    kind: positive(),
    default: '10',
    description:
      'Concurrent long polls per key; the default for organisations without their own (console or `cli orgs limits`).',
  },
  {
    env: 'LIMIT_LONG_POLLS_PER_ORG',
    key: 'longPollsPerOrg',
    group: 'limits',
    kind: positive(),
    default: '30',
    description:
      'Concurrent long polls per organisation; the default for ' +
      'organisations without their own (console or `cli orgs limits`).',
  },
  {
    env: 'LIMIT_INBOX_BURST',
    key: 'inboxBurst',
    group: 'limits',
    kind: positive(),
    default: '10',
    description:
      'Messages per inbox per five-minute UTC bucket; the default for ' +
      'organisations without their own (console or `cli orgs limits`).',
  },
  {
    env: 'LIMIT_ORG_BURST',
    key: 'orgBurst',
    group: 'limits',
    kind: positive(),
    default: '25',
    description:
      'Messages per organisation per five-minute UTC bucket; the default ' +
      'for organisations without their own (console or `cli orgs limits`).',
  },
  {
    env: 'LIMIT_MESSAGE_BYTES',
    key: 'messageBytes',
    group: 'limits',
    kind: positive(),
    default: String(10 * MiB),
    description: 'Raw message size (advertised as SMTP SIZE and enforced).',
  },
  {
    env: 'LIMIT_MESSAGE_LINES',
    key: 'messageLines',
    group: 'limits',
    kind: positive(),
    default: '300000',
    description:
      'Lines per raw message, and again for all the messages nested in it once ' +
      'their bodies are decoded (not a spec limit: a guard against mail crafted to ' +
      'stall the parser; a 10 MiB message in 76-column base64 has about 140,000).',
  },
  {
    env: 'LIMIT_MESSAGE_PARTS',
    key: 'messageParts',
    group: 'limits',
    kind: positive(),
    default: '5000',
    description:
      'Lines that can delimit a MIME part (they start with `--`) per raw message, and again for all the ' +
      'messages nested in it once their bodies are decoded (not a spec limit: each part costs the parser ' +
      'about 2 KiB of memory, and 300,000 empty parts in 1.5 MB took 700 MiB; real mail has a few dozen).',
  },
  {
    env: 'LIMIT_HEADER_BYTES',
    key: 'headerBytes',
    group: 'limits',
    kind: positive(2 * MiB),
    default: String(256 * 1024),
    description:
      'Header bytes per message, all MIME parts together (not a spec limit: the parser holds about 100 times ' +
      'the header bytes in memory, so 1.75 MB of `To:` cost 174 MiB; real mail has a few KiB). Over it: `554`.',
  },
  {
    env: 'LIMIT_ATTACHMENTS',
    key: 'attachments',
    group: 'limits',
    kind: positive(10_000),
    default: '25',
    description: 'Attachments per message.',
  },
  {
    env: 'LIMIT_ATTACHMENT_BYTES',
    key: 'attachmentBytes',
    group: 'limits',
    kind: positive(),
    default: String(5 * MiB),
    description: 'Decoded size of one attachment.',
  },
  {
    env: 'LIMIT_ATTACHMENTS_TOTAL_BYTES',
    key: 'attachmentsTotalBytes',
    group: 'limits',
    kind: positive(),
    default: String(10 * MiB),
    description: 'Decoded size of all attachments of one message.',
  },
  {
    env: 'LIMIT_BODY_BYTES',
    key: 'bodyBytes',
    group: 'limits',
    kind: positive(),
    default: String(1 * MiB),
    description: 'Text body and HTML body, each (UTF-8 bytes).',
  },
  {
    env: 'RETENTION_DAYS',
    key: 'retentionDays',
    group: 'limits',
    kind: positive(3650),
    default: '30',
    description: 'Days a message is kept (`expires_at`).',
  },
  {
    env: 'IDEMPOTENCY_HOURS',
    key: 'idempotencyHours',
    group: 'limits',
    kind: positive(24 * 365),
    default: '24',
    description: 'Hours an `Idempotency-Key` is remembered.',
  },
  {
    env: 'PARSE_TIMEOUT_MS',
    key: 'parseTimeoutMs',
    kind: { type: 'int', min: 10, max: 600_000 },
    default: '5000',
    description:
      'Time one message may take in a parse worker (not a spec limit: real mail of 10 MiB parses ' +
      'in well under a second); past it the message is refused with 554 and the worker replaced.',
  },
  {
    env: 'SMTP_MAX_CLIENTS',
    key: 'smtpMaxClients',
    group: 'limits',
    kind: positive(100_000),
    default: '200',
    description: 'Concurrent SMTP connections; more get 421.',
  },
  // The SMTP guards (docs/internals/smtp-guards.md): one client address, one slow client or one flood of
  // DATA must not hold the listener or the memory of the machine.
  {
    env: 'SMTP_MAX_CLIENTS_PER_ADDRESS',
    key: 'smtpMaxClientsPerAddress',
    group: 'limits',
    kind: positive(100_000),
    default: '20',
    description:
      'Concurrent SMTP connections from one client address (IPv6: one /64); ' +
      'more get 421 at once, so one address cannot fill `SMTP_MAX_CLIENTS`.',
  },
  {
    env: 'SMTP_DATA_MEMORY_BYTES',
    key: 'smtpDataMemoryBytes',
    group: 'limits',
    kind: positive(),
    default: String(16 * MiB),
    description:
      'DATA bytes kept in memory across all SMTP connections (one client address may hold half). A ' +
      'message keeps its first 128 KiB in memory while this has room; past that, or when it is full, the ' +
      'message continues in a spool file on the data volume (`spool/` beside the database), so no message ' +
      'is refused for memory. What bounds memory under many large messages is the parse gate: one ' +
      '`LIMIT_MESSAGE_BYTES` of large messages parsed at a time (docs/internals/inbound-processing.md).',
  },
  {
    env: 'SMTP_GREETING_TIMEOUT_MS',
    key: 'smtpGreetingTimeoutMs',
    group: 'limits',
    kind: { type: 'int', min: 50, max: 3_600_000 },
    default: '30000',
    description: 'Time from connecting to `EHLO`/`HELO`; then `421` and the connection closes.',
  },
  {
    env: 'SMTP_COMMAND_TIMEOUT_MS',
    key: 'smtpCommandTimeoutMs',
    group: 'limits',
    kind: { type: 'int', min: 50, max: 3_600_000 },
    default: '60000',
    description:
      "Time for the client's next step (`MAIL`, `RCPT`, `DATA`) or any silence; a line " +
      'trickled byte by byte or a stream of `NOOP`s does not extend it. Then `421`.',
  },
  {
    env: 'SMTP_DATA_TIMEOUT_MS',
    key: 'smtpDataTimeoutMs',
    group: 'limits',
    kind: { type: 'int', min: 50, max: 3_600_000 },
    default: '300000',
    description: 'Time from `DATA` to the final dot (a 10 MiB message at 35 KB/s); then `421`, nothing is stored.',
  },
  {
    env: 'SMTP_SESSION_TIMEOUT_MS',
    key: 'smtpSessionTimeoutMs',
    group: 'limits',
    kind: { type: 'int', min: 50, max: 86_400_000 },
    default: '600000',
    description: 'Lifetime of one SMTP connection; a transaction in progress finishes first, then `421`.',
  },
  {
    env: 'SMTP_PROXY_PROTOCOL',
    key: 'smtpProxyProtocol',
    kind: { type: 'enum', values: ['off', 'on'] },
    default: 'off',
    description:
      '`on` when a TCP proxy in front of the SMTP listener sends a PROXY protocol v1 header ' +
      "(for example Fly's `proxy_proto` handler): the per-address guards then count the " +
      "real client address instead of the proxy's. Every connection from `TRUSTED_PROXIES` " +
      'must then start with the header, within `SMTP_GREETING_TIMEOUT_MS`; a peer outside ' +
      'them is an ordinary SMTP client, and a PROXY line from it is refused.',
  },
  {
    env: 'SMTP_GREETING_DELAY_MS',
    key: 'smtpGreetingDelayMs',
    // Every connection holds a client slot while it waits, so the wait stays short of a minute.
    kind: { type: 'int', min: 0, max: 30_000 },
    default: '0',
    description:
      'Milliseconds the SMTP `220` greeting is held; a client that talks before it gets `421 You talk too ' +
      'soon` and is disconnected. 0 greets at once, which is what a test inbox wants (applications under test ' +
      'open a connection per message). A public MX that takes mail from the internet may set a few seconds to ' +
      'turn away spam bots that do not wait (see docs/latency.md). Below `SMTP_GREETING_TIMEOUT_MS`.',
  },
  {
    env: 'DISK_MIN_FREE',
    key: 'diskMinFree',
    kind: {
      type: 'string',
      pattern: /^([0-9]{1,2}(\.[0-9]+)?%|[0-9]+(B|KiB|MiB|GiB)?)$/,
      hint: 'bytes such as 64MiB, or a percentage of the volume such as 5%',
    },
    default: '64MiB',
    description:
      'Free-space guard: below this much free space on the database volume (or room left ' +
      "under SQLite's max_page_count) RCPT answers `452 4.3.1 Insufficient system storage` " +
      'and createInbox 503 `insufficient_storage`; reads and deletes go on. `0` turns it off.',
  },
  {
    env: 'SMTP_TLS_CERT_FILE',
    key: 'smtpTlsCertFile',
    kind: { type: 'string' },
    default: '',
    description:
      'PEM certificate (chain) offered by STARTTLS; re-read on SIGHUP or when the file changes. Empty: a ' +
      'self-signed certificate for `RECEIVING_DOMAIN`, made on first start and kept beside the database.',
  },
  {
    env: 'SMTP_TLS_KEY_FILE',
    key: 'smtpTlsKeyFile',
    kind: { type: 'string' },
    default: '',
    description: 'PEM private key of `SMTP_TLS_CERT_FILE` (both or neither).',
  },
  {
    env: 'SMTP_REQUIRE_TLS',
    key: 'smtpRequireTls',
    kind: { type: 'enum', values: ['false', 'true'] },
    default: 'false',
    description: '`true`: MAIL FROM before STARTTLS answers 530 (an internet MX should keep plain SMTP: `false`).',
  },
  {
    env: 'METRICS_TOKEN',
    key: 'metricsToken',
    kind: { type: 'string' },
    default: '',
    description:
      'Bearer token (16 or more characters, no spaces) for Prometheus ' +
      'metrics at `/metrics`. Empty: `/metrics` answers 404.',
  },
  {
    env: 'METRICS_PORT',
    key: 'metricsPort',
    kind: { type: 'string', pattern: /^([0-9]{1,5})?$/, hint: 'a port number' },
    default: '',
    description:
      'A second listener serving only `/metrics`, without a token, for scrapers that ' +
      "cannot send one (Fly's `[metrics]`). Never publish this port. Empty: none.",
  },
  {
    env: 'METRICS_HOST',
    key: 'metricsHost',
    kind: {
      type: 'string',
      pattern: /^[A-Za-z0-9.:_-]+$/,
      hint: 'an address or host name such as 127.0.0.1 or 0.0.0.0',
    },
    // Not HOST: the API listens on every interface by default, and a listener without a token must not.
    default: '127.0.0.1',
    description:
      'Bind address of the `METRICS_PORT` listener. The default, loopback, serves only ' +
      "scrapers on the same machine; on Fly, `0.0.0.0` as `fly.toml` sets it (Fly's " +
      "metrics page asks for it; IPv4 only, so not the organisation's 6PN, and no service " +
      'publishes the port). Never a public address: the listener asks for no token.',
  },
  // Read only by the start-up entry (src/entry.ts), which runs the server under Litestream.
  {
    env: 'LITESTREAM_REPLICA',
    key: 'litestreamReplica',
    kind: { type: 'enum', values: ['none', 'file', 's3'] },
    default: 'none',
    description:
      'Where `bun src/entry.ts` replicates the database: `none` (run the server directly), `file` ' +
      "(a local folder) or `s3` (S3-compatible storage such as Fly's Tigris; reads `BUCKET_NAME`, " +
      '`AWS_ENDPOINT_URL_S3`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`).',
  },
  {
    env: 'LITESTREAM_REPLICA_PATH',
    key: 'litestreamReplicaPath',
    kind: { type: 'string' },
    default: '',
    description:
      'For `file`: the replica folder (required). For `s3`: the key prefix inside the bucket (empty: `pigeonhole`).',
  },
  {
    env: 'LITESTREAM_BIN',
    key: 'litestreamBin',
    kind: { type: 'string' },
    default: '',
    description:
      'Litestream 0.3 binary (empty: the one bundled by `@flydotio/litestream-linux-x64`, else `litestream` on PATH).',
  },
  {
    env: 'LITESTREAM_METRICS_PORT',
    key: 'litestreamMetricsPort',
    kind: { type: 'int', min: 0, max: 65_535 },
    default: '0',
    description:
      "Loopback port of Litestream's own metrics listener (`addr` in litestream.yml), which " +
      'the server reads to know what the replica holds. `0`: the entry picks a free port at ' +
      'start and passes it to the server. Only used when `LITESTREAM_REPLICA` is not `none`.',
  },
  {
    env: 'REPLICATION_MAX_LAG_SECONDS',
    key: 'replicationMaxLagSeconds',
    kind: { type: 'int', min: 1, max: 86_400 },
    default: '60',
    description:
      '`/ready` fails (check `replication`) and a `replication_lagging` warning is logged ' +
      'while the oldest write not yet in the replica is older than this. Only with a replica.',
  },
  {
    env: 'LITESTREAM_LOCAL_WARN',
    key: 'litestreamLocalWarn',
    kind: {
      type: 'string',
      pattern: /^([0-9]{1,2}(\.[0-9]+)?%|[0-9]+(B|KiB|MiB|GiB)?)$/,
      hint: 'bytes such as 256MiB, or a percentage of the volume such as 10%',
    },
    default: '10%',
    description:
      "A `litestream_local_files_large` warning is logged when Litestream's files beside the database " +
      '(its shadow WAL, which grows while the replica cannot be reached) pass this size; one ' +
      '`litestream_local_files_normal` line when they shrink below it again. `0` turns the warning off.',
  },
  {
    env: 'SERVER_SCRIPT',
    key: 'serverScript',
    kind: { type: 'string' },
    default: '',
    description:
      'Script the entry (`src/entry.ts`) runs as the server (empty: `src/index.ts`; the ' +
      'Docker image sets the production bundle `dist/server.js` from `bun run build`).',
  },
  {
    env: 'RUN_AS',
    key: 'runAs',
    kind: { type: 'string', pattern: /^([0-9]+:[0-9]+)?$/, hint: 'uid:gid such as 1000:1000' },
    default: '',
    description:
      'When the entry starts as root: hand the database folder to this uid:gid ' +
      'and run Litestream and the server as it (the Docker image sets 1000:1000).',
  },
] as const satisfies readonly Setting[]

type Declared = (typeof SETTINGS)[number]
/** One readonly property per setting, named by its `key` and typed by its `kind`. */
type Values<S extends Declared> = { readonly [E in S as E['key']]: ValueOf<E['kind']> }

/** Quotas and content limits, handed as one object to what enforces them. */
export type Limits = Values<Extract<Declared, { group: 'limits' }>>
export type Config = Values<Exclude<Declared, { group: 'limits' }>> & { readonly limits: Limits }

/** Rules that involve more than one setting. */
function checkCombinations(config: Config): void {
  if (config.emailRouting === 'cloudflare') {
    if (!config.cloudflareApiToken)
      throw new ConfigError('CLOUDFLARE_API_TOKEN', 'required when EMAIL_ROUTING=cloudflare')
    if (!config.cloudflareZoneId) throw new ConfigError('CLOUDFLARE_ZONE_ID', 'required when EMAIL_ROUTING=cloudflare')
    if (config.cloudflareRuleAction === 'forward' && !/^[^@\s]+@[^@\s]+$/.test(config.cloudflareRuleDestination)) {
      throw new ConfigError(
        'CLOUDFLARE_RULE_DESTINATION',
        `must be a verified destination email address when ` +
          `CLOUDFLARE_RULE_ACTION=forward, got "${config.cloudflareRuleDestination}"`,
      )
    }
  }
  if (!config.smtpTlsCertFile !== !config.smtpTlsKeyFile) {
    throw new ConfigError(
      config.smtpTlsCertFile ? 'SMTP_TLS_KEY_FILE' : 'SMTP_TLS_CERT_FILE',
      'SMTP_TLS_CERT_FILE and SMTP_TLS_KEY_FILE go together',
    )
  }
  // Checked here rather than by a pattern, whose message would repeat the secret.
  if (config.metricsToken && !/^\S{16,}$/.test(config.metricsToken))
    throw new ConfigError('METRICS_TOKEN', 'must be at least 16 characters without spaces')
  // The pattern allows five digits; past 65535 the listener would throw after the others opened.
  if (config.metricsPort !== '' && Number(config.metricsPort) > 65535)
    throw new ConfigError('METRICS_PORT', `must be between 0 and 65535, got ${config.metricsPort}`)
  const untrusted = TrustedNetworks.problem(config.trustedProxies)
  if (untrusted) throw new ConfigError('TRUSTED_PROXIES', untrusted)
  // With no one trusted, either switch would refuse every proxied
  // sender or ignore the header for good: a mistake, not a choice.
  if (TrustedNetworks.parse(config.trustedProxies).empty) {
    if (config.smtpProxyProtocol === 'on')
      throw new ConfigError(
        'TRUSTED_PROXIES',
        'must name the proxy when SMTP_PROXY_PROTOCOL=on (no PROXY line would be believed)',
      )
    if (config.clientAddressHeader)
      throw new ConfigError(
        'TRUSTED_PROXIES',
        'must name the proxy when CLIENT_ADDRESS_HEADER is set (the header would never be believed)',
      )
  }
  // The greeting timeout runs from the connect: a held greeting must leave the client time to answer it.
  if (config.smtpGreetingDelayMs >= config.limits.smtpGreetingTimeoutMs) {
    throw new ConfigError(
      'SMTP_GREETING_DELAY_MS',
      `must be below SMTP_GREETING_TIMEOUT_MS ` +
        `(${config.limits.smtpGreetingTimeoutMs}), got ${config.smtpGreetingDelayMs}`,
    )
  }
  // Bun cuts a silent connection even while its request is still being handled, so the
  // slowest handling (a body arriving; two attempts at Cloudflare and the pause between)
  // must fit in the idle timeout. Bun's coarse check only ever cuts later, never earlier.
  const slowestMs = Math.max(
    config.httpBodyTimeoutMs,
    config.emailRouting === 'cloudflare' ? 2 * config.cloudflareTimeoutMs + 1000 : 0,
  )
  if (config.httpIdleTimeoutSeconds * 1000 < slowestMs) {
    const floor = Math.ceil(slowestMs / 1000)
    throw new ConfigError(
      'HTTP_IDLE_TIMEOUT_SECONDS',
      `must be at least ${floor} (HTTP_BODY_TIMEOUT_MS, and twice CLOUDFLARE_TIMEOUT_MS ` +
        `plus a second with Cloudflare routing), got ${config.httpIdleTimeoutSeconds}`,
    )
  }
  // Checked here rather than by a pattern, whose message would repeat the password.
  if (config.databaseUrl !== '') {
    if (!isPostgresUrl(config.databaseUrl))
      throw new ConfigError('DATABASE_URL', 'expected a postgres:// or postgresql:// URL')
    // The provider's backups replace Litestream's; a replica of the unused SQLite file would copy nothing.
    if (config.litestreamReplica !== 'none')
      throw new ConfigError('LITESTREAM_REPLICA', 'must be none when DATABASE_URL is set (PostgreSQL keeps the data)')
  }
  if (config.litestreamReplica === 'file' && !config.litestreamReplicaPath)
    throw new ConfigError('LITESTREAM_REPLICA_PATH', 'required when LITESTREAM_REPLICA=file')
  try {
    parseAllowList(config.consoleLinkCheckAllow)
  } catch (error) {
    throw new ConfigError('CONSOLE_LINK_CHECK_ALLOW', (error as Error).message)
  }
}

/** Reads the environment (or the given overrides, for tests) into a typed, frozen Config. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const { top, limits } = parseSettings(SETTINGS, env)
  const config = Object.freeze({
    ...top,
    receivingDomain: String(top.receivingDomain).toLowerCase(),
    limits: Object.freeze(limits),
  }) as Config
  checkCombinations(config)
  return config
}

/** loadConfig() for the process entries: a bad value ends the process with one line and exit 78. */
export const loadConfigOrExit = (): Config => exitOnConfigError(() => loadConfig())

/** Markdown table of every variable, for the README. */
export const configTable = (): string => settingsTable(SETTINGS)
