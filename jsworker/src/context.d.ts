import type { Message } from 'amqplib';

/** The request's metadata, passed to handlers as their second argument (read-only). */
export class StepContext {
  constructor(fields: {
    queue: string;
    correlationId?: string;
    headers?: Record<string, unknown>;
    messageId?: string;
    redelivered?: boolean;
  });
  /** The context of a message delivered by amqplib on `queue`. */
  static fromMessage(message: Message, queue: string): StepContext;
  /** The job the request belongs to: `correlation_id` before its last ':' ('' when absent). */
  readonly jobId: string;
  /** The workflow step name (after the last ':'), or the queue name when there is none. */
  readonly step: string;
  /** 1-based attempt number from the `x-attempt` header (1 when absent). */
  readonly attempt: number;
  /** The raw correlation id, `<job-id>:<step-name>`, echoed in the reply. */
  readonly correlationId: string | undefined;
  /** The top-level workflow name from the `x-workflow` header. */
  readonly workflow: string | undefined;
  /** The W3C trace context of the step's span (`traceparent` header), when the manager sends it. */
  readonly traceparent: string | undefined;
  /** The job metadata (`x-meta` header, a JSON object), when the job has some. */
  readonly meta: Record<string, unknown> | undefined;
  /** All request headers, frozen. */
  readonly headers: Readonly<Record<string, unknown>>;
  /** The request's AMQP message id (`<job-id>:<step>:<attempt>`). */
  readonly messageId: string | undefined;
  /** The queue the request arrived on (with any queue prefix). */
  readonly queue: string;
  /** True when RabbitMQ delivered this request before (e.g. a worker died). */
  readonly redelivered: boolean;
  /** `job=... step=... attempt=...`, the fields every log line about this request carries. */
  readonly logFields: string;
}
