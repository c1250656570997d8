/**
 * One SMTP connection as smtp-server keeps it. Its typings do not name the class, so it is
 * taken from the server's `connections` set; the guards, the PROXY trust and the size
 * declaration hook all reach into it.
 */
import type { SMTPServer } from 'smtp-server'

export type SmtpConnection = SMTPServer['connections'] extends Set<infer C> ? C : never
