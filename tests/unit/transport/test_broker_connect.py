"""The broker adapter's connect: a bad reconnect setting in the URL is the manager's own error
(amqp_outage raises its ReconnectSettingsError; it must not escape the adapter)."""

from __future__ import annotations

import pytest

from workflow_manager.errors import BrokerError
from workflow_manager.transport.broker import Broker


async def test_a_bad_reconnect_interval_in_the_url_is_a_broker_error():
    broker = Broker("amqp://guest:secret@127.0.0.1:1/?reconnect_interval=-2", prefetch=10)
    with pytest.raises(BrokerError, match=r"amqp://guest:\*\*\*@.*reconnect_interval must be"):
        await broker.connect(timeout_s=1)
    assert not broker.connected
