// StepContext: what a handler may want to know about the request it is handling.

import {
  HEADER_ATTEMPT,
  HEADER_META,
  HEADER_TRACEPARENT,
  HEADER_WORKFLOW,
  headerText,
  parseAttempt,
  parseMeta,
  splitCorrelationId,
} from './protocol.js';

/** The request's metadata, passed to handlers as their second argument (read-only). */
export class StepContext {
  /**
   * Build the context of one request from its AMQP properties.
   * @param {object} fields
   */
  constructor({ queue, correlationId, headers, messageId, redelivered }) {
    const own = Object.freeze({ ...(headers ?? {}) });
    const [jobId, step] = splitCorrelationId(correlationId);
    const attempt = parseAttempt(own[HEADER_ATTEMPT]);
    this.jobId = jobId;
    this.step = step ?? queue;
    this.attempt = attempt ?? 1;
    this.correlationId = correlationId;
    this.workflow = headerText(own[HEADER_WORKFLOW]);
    this.traceparent = headerText(own[HEADER_TRACEPARENT]);
    this.meta = parseMeta(own[HEADER_META]);
    this.headers = own;
    this.messageId = messageId;
    this.queue = queue;
    this.redelivered = Boolean(redelivered);
    // Echoed only when the request carried a valid one: without it the manager counts the reply
    // for the step's current attempt, which is right; a made-up 1 could be wrong.
    Object.defineProperty(this, 'echoAttempt', { value: attempt, enumerable: false });
    // What the handler adds to the job's metadata (patchMeta), sent with a successful reply.
    Object.defineProperty(this, 'metaPatch', { value: {}, enumerable: false });
    Object.freeze(this);
  }

  /**
   * Add `patch` (a plain object) to the job's metadata: sent as `x-meta-patch` with a successful
   * reply and deep-merged by the manager (later wins), so later requests of the job carry it.
   */
  patchMeta(patch) {
    Object.assign(this.metaPatch, patch);
  }

  /** The context of a message delivered by amqplib on `queue`. */
  static fromMessage(message, queue) {
    const { properties, fields } = message;
    return new StepContext({
      queue,
      correlationId: properties.correlationId,
      headers: properties.headers,
      messageId: properties.messageId,
      redelivered: fields.redelivered,
    });
  }

  /** `job=... step=... attempt=...`, the fields every log line about this request carries. */
  get logFields() {
    return `job=${this.jobId || '-'} step=${this.step} attempt=${this.attempt}`;
  }
}
