import { randomBytes } from 'node:crypto'

export const randomHex = (bytes: number): string => randomBytes(bytes).toString('hex')

/** Resource ids: a readable type prefix and 128 random bits (32 hex), as the spec shapes them. */
export const newId = (prefix: 'inbox' | 'msg' | 'att' | 'org' | 'user' | 'invite' | 'check'): string =>
  `${prefix}_${randomHex(16)}`

export const ID_PATTERNS = {
  inbox: /^inbox_[0-9a-f]{32}$/,
  msg: /^msg_[0-9a-f]{32}$/,
  att: /^att_[0-9a-f]{32}$/,
} as const

export const newRequestId = (): string => `req_${randomHex(12)}`
