// The errors jsworker raises, one tree under JsworkerError:
//
//   JsworkerError               anything jsworker reports to a user
//   ├── StepDefinitionError     a step handler or its registration is invalid (raised by step())
//   ├── SettingsError           a worker option or environment variable is invalid
//   ├── WorkerStateError        a lifecycle call made in the wrong state (e.g. start twice)
//   ├── BrokerError             RabbitMQ cannot be reached or refused a declaration at start
//   ├── PayloadRefError         a payload reference cannot be read or a value cannot be stored
//   └── ProtocolError           a request or result breaks the wire protocol (answered with x-error)
//       ├── InvalidRequest      the request body is not a JSON object
//       └── InvalidResult       a handler returned something that is not a JSON object
//
// Every message names the thing, shows the bad value and, where there is one, suggests the fix.

/** Root of every error jsworker reports to a user. */
export class JsworkerError extends Error {
  /** @param {string} message @param {ErrorOptions} [options] */
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A step handler or its registration is invalid. */
export class StepDefinitionError extends JsworkerError {}

/** A worker option (URL, prefetch, environment variable) is invalid. */
export class SettingsError extends JsworkerError {}

/** A lifecycle method was called in a state that does not allow it. */
export class WorkerStateError extends JsworkerError {}

/** RabbitMQ cannot be reached or refused an operation at start-up. */
export class BrokerError extends JsworkerError {}

/** A payload reference cannot be resolved (unknown store, missing value, unreachable store,
 * bytes that do not match) or a reply's value cannot be stored; answered with an x-error reply. */
export class PayloadRefError extends JsworkerError {}

/** A request or a handler's result breaks the wire protocol; answered with an x-error reply. */
export class ProtocolError extends JsworkerError {}

/** The request body is not a JSON object. */
export class InvalidRequest extends ProtocolError {}

/** A handler returned something other than a JSON object (or undefined/null). */
export class InvalidResult extends ProtocolError {}
