import type { Principal } from '../api-keys/authenticate.ts'
import type { Inbox } from '../common/models.ts'
import type { Services } from '../common/services.ts'
import { findActiveInbox } from './find-inbox.ts'
import { presentInbox } from './present.ts'

export async function getInbox(s: Services, principal: Principal, inboxId: string): Promise<Inbox> {
  return presentInbox(await findActiveInbox(s, principal, inboxId))
}
