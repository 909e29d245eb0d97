/** Root of every error jsworker reports to a user. */
export class JsworkerError extends Error {
  constructor(message: string, options?: ErrorOptions);
}
/** A step handler or its registration is invalid. */
export class StepDefinitionError extends JsworkerError {}
/** A worker option (URL, prefetch, environment variable) is invalid. */
export class SettingsError extends JsworkerError {}
/** A lifecycle method was called in a state that does not allow it. */
export class WorkerStateError extends JsworkerError {}
/** RabbitMQ cannot be reached or refused an operation at start-up. */
export class BrokerError extends JsworkerError {}
/** A payload reference cannot be resolved or a reply's value cannot be stored (x-error reply). */
export class PayloadRefError extends JsworkerError {}
/** A request or a handler's result breaks the wire protocol; answered with an x-error reply. */
export class ProtocolError extends JsworkerError {}
/** The request body is not a JSON object. */
export class InvalidRequest extends ProtocolError {}
/** A handler returned something other than a JSON object (or undefined/null). */
export class InvalidResult extends ProtocolError {}
