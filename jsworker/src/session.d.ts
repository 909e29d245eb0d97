import type { ConsumeMessage } from 'amqplib';
import type { Reply } from './protocol.js';

/** The broker refused (nacked) a reply. */
export class ReplyRefused extends Error {}
/** The channel or connection is gone. */
export class SessionClosed extends Error {}

/** One connection, its confirm channel and a consumer per step queue. */
export class Session {
  static open(options: {
    url: string;
    name: string;
    prefetch: number;
    queues: string[];
    onDelivery: (message: ConsumeMessage, queue: string, session: Session) => void;
  }): Promise<Session>;
  /** Settles with a reason once the connection, the channel or a consumer is gone. */
  readonly lost: Promise<string>;
  /** Whether publishing and acking can still work. */
  readonly open: boolean;
  publish(replyTo: string, reply: Reply, correlationId: string | undefined): Promise<'confirmed' | 'returned'>;
  ack(message: ConsumeMessage): boolean;
  requeue(message: ConsumeMessage): boolean;
  cancelConsumers(): Promise<void>;
  close(): Promise<void>;
}
