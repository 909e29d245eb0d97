"""amqp_outage: how a robust AMQP connection behaves across a broker outage, shared by the
manager and pyworker.

The shared layer below both packages: it imports neither `workflow_manager` nor `pyworker`
(only aio-pika and aiormq), and each of them imports it rather than the other. Its users:

- `workflow_manager.transport.broker` (the manager's RabbitMQ adapter),
- `pyworker.worker` and `pyworker.delivery` (the Python worker library),

and any other aio-pika client that wants the same behaviour. What it offers:

- `connect()` opens a `PromptRobustConnection`: aio-pika's RobustConnection whose reconnect
  attempts follow a `Backoff` (0.5 s at first, growing with the outage, at most 5 s) instead of
  a fixed 5 s; while it waits between attempts it tries the broker's TCP port every 0.1 s and
  attempts at once when the port accepts (a broker still starting that refuses the handshake
  is then tried again on a schedule that starts anew). A client consumes again soon after the
  broker is back, however long it was down.
- `Outage` knows whether the connection is up and since when it is down, counts what was held
  back meanwhile, and logs one WARNING when an outage starts, one INFO when it ends and at most
  one reminder every 30 s in between. Publishers await `wait_connected()`.
- `quiet_disconnect_noise()` installs `DisconnectNoiseFilter` on aio-pika's and aiormq's
  loggers: their per-attempt lines and the callback errors a disconnect causes are dropped;
  any other error still shows. `is_disconnect()` tells a lost connection's exceptions apart.
- `ReconnectSettingsError` (a `ValueError`) for an invalid reconnect setting; each user
  translates it into its own error tree.
"""

from amqp_outage.backoff import Backoff
from amqp_outage.connection import PROBE_EVERY_S, PromptRobustConnection, connect, port_answers
from amqp_outage.errors import ReconnectSettingsError
from amqp_outage.noise import (
    NOISY_LOGGERS,
    DisconnectNoiseFilter,
    is_disconnect,
    quiet_disconnect_noise,
)
from amqp_outage.tracker import Outage

__all__ = [
    "Backoff",
    "PROBE_EVERY_S",
    "PromptRobustConnection",
    "port_answers",
    "connect",
    "Outage",
    "DisconnectNoiseFilter",
    "quiet_disconnect_noise",
    "is_disconnect",
    "NOISY_LOGGERS",
    "ReconnectSettingsError",
]
