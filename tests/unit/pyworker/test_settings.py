"""Worker settings: URL resolution from the environment, masking, validation."""

from __future__ import annotations

import pytest

from pyworker import SettingsError, WorkerSettings
from pyworker.settings import (
    DEFAULT_AMQP_URL,
    mask_url,
    resolve_amqp_url,
    resolve_queue_prefix,
)

EXPLICIT = "amqp://u:p@explicit:5672/"
FROM_URL = "amqp://u:p@from-amqp-url:5672/"
FROM_SERVER = "amqp://u:p@from-amqp-server:5672/"


@pytest.mark.parametrize(
    ("explicit", "environ", "expected"),
    [
        (EXPLICIT, {"AMQP_URL": FROM_URL, "AMQP_SERVER": FROM_SERVER}, EXPLICIT),
        (None, {"AMQP_URL": FROM_URL, "AMQP_SERVER": FROM_SERVER}, FROM_URL),
        (None, {"AMQP_URL": "  ", "AMQP_SERVER": FROM_SERVER}, FROM_SERVER),
        (None, {}, DEFAULT_AMQP_URL),
    ],
)
def test_url_precedence(explicit, environ, expected):
    assert resolve_amqp_url(explicit, environ) == expected


def test_a_bad_url_in_the_environment_names_the_variable_and_hides_the_password():
    with pytest.raises(SettingsError, match="environment variable AMQP_SERVER") as raised:
        resolve_amqp_url(None, {"AMQP_SERVER": "http://user:secret@host/"})
    assert "secret" not in str(raised.value)


@pytest.mark.parametrize(
    ("explicit", "environ", "expected"),
    [
        ("a.", {"QUEUE_PREFIX": "b."}, "a."),
        ("", {"QUEUE_PREFIX": "b."}, ""),
        (None, {"QUEUE_PREFIX": " b. "}, "b."),
        (None, {}, ""),
    ],
)
def test_queue_prefix_precedence(explicit, environ, expected):
    assert resolve_queue_prefix(explicit, environ) == expected


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("amqp://guest:guest@localhost:5672/", "amqp://guest:******@localhost:5672/"),
        ("amqps://user:p%40ss@host/vhost", "amqps://user:******@host/vhost"),
        ("amqp://localhost/", "amqp://localhost/"),
    ],
)
def test_mask_url(url, masked):
    assert mask_url(url) == masked


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prefetch": 0}, "prefetch: 0 is out of range"),
        ({"prefetch": 70000}, "out of range"),
        ({"prefetch": "10"}, "prefetch: expected an integer"),
        ({"prefetch": True}, "prefetch: expected an integer"),
        ({"stop_timeout_s": -1}, "stop_timeout_s"),
        ({"amqp_url": "localhost:5672"}, "is not an AMQP URL"),
        ({"amqp_url": "amqp://guest:guest@localhost:abc/"}, "is not an AMQP URL"),
        ({"queue_prefix": 3}, "queue_prefix: expected a string"),
    ],
)
def test_invalid_settings_are_rejected(options, message):
    with pytest.raises(SettingsError, match=message):
        WorkerSettings(**options)


def test_replace_ignores_none_and_validates():
    settings = WorkerSettings(prefetch=3)

    assert settings.replace(prefetch=None, amqp_url=None) == settings
    assert settings.replace(prefetch=5).prefetch == 5
    with pytest.raises(SettingsError):
        settings.replace(prefetch=-1)


def test_repr_masks_the_password():
    assert "******" in repr(WorkerSettings(amqp_url="amqp://u:secret@h/"))
    assert "secret" not in repr(WorkerSettings(amqp_url="amqp://u:secret@h/"))
