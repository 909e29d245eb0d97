import type { ConsumeMessage } from 'amqplib';
import type { StepContext } from './context.js';
import type { PayloadRefs } from './payloads.js';
import type { Reply } from './protocol.js';
import type { Session } from './session.js';
import type { Logger } from './settings.js';
import type { StepHandler } from './worker.js';

export const REFUSED_REPLY_DELAY_MS: number;
/** The reply for one request: the handler's result, or an x-error for whatever it threw. */
export function outcome(
  handler: StepHandler,
  body: Uint8Array,
  ctx: StepContext,
  logger: Logger,
  payloads?: PayloadRefs,
): Promise<Reply>;
/** Handle one delivered request: reply to `reply_to` after the handler, then ack. */
export function handleDelivery(args: {
  message: ConsumeMessage;
  queue: string;
  handler: StepHandler;
  session: Session;
  logger: Logger;
  payloads?: PayloadRefs;
}): Promise<void>;
