"""serve's limit options (workflow_manager/limitoptions.py): defaults, the env, and clear usage
errors."""

from __future__ import annotations

import pytest

from workflow_manager.cli import build_parser, main
from workflow_manager.limitoptions import limits_from_args
from workflow_manager.limits import DEFAULT_LIMITS
from workflow_manager.settings import HttpSettings, ManagerSettings


def _parse(argv: list[str], env: dict[str, str] | None = None):
    return limits_from_args(build_parser(env or {}).parse_args(["serve", *argv]))


def test_without_options_every_limit_is_its_default():
    manager, http = _parse([])
    assert manager == {} and http == HttpSettings()
    settings = ManagerSettings(**manager)
    for field, default in DEFAULT_LIMITS.items():
        model = settings if field in ManagerSettings.model_fields else http
        assert getattr(model, field) == default, field


def test_options_and_env_reach_the_settings():
    manager, http = _parse(
        ["--max-json-depth", "64", "--max-body-bytes", "2048", "--allowed-hosts", "A.example, b"],
        {"WM_MAX_EVENT_STREAMS": "7", "WM_HTTP_REQUEST_TIMEOUT": "2.5"},
    )
    assert manager == {"max_json_depth": 64}
    assert (http.max_body_bytes, http.max_event_streams) == (2048, 7)
    assert (http.request_timeout_s, http.allowed_hosts) == (2.5, ("a.example", "b"))


@pytest.mark.parametrize(
    ("argv", "env", "said"),
    [
        (["--max-json-depth", "10"], {}, "--max-json-depth: input should be greater than"),
        (["--max-json-depth", "300"], {}, "--max-json-depth: input should be less than"),
        (["--max-body-bytes", "lots"], {}, "--max-body-bytes (or WM_MAX_BODY_BYTES) must be a"),
        ([], {"WM_SESSION_TTL": "soon"}, "--session-ttl (or WM_SESSION_TTL) must be a number"),
        (["--http-idle-timeout", "0"], {}, "--http-idle-timeout: input should be greater than 0"),
    ],
)
def test_a_bad_limit_is_a_usage_error_naming_its_option(argv, env, said, capsys):
    assert main(["serve", *argv], env=env) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_help_shows_each_limit_with_its_default(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"], env={})
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--max-json-depth N", "--max-body-bytes BYTES", "--max-event-streams N"):
        assert option in text
    assert "default: 128" in text and "docs/security.md" in text
