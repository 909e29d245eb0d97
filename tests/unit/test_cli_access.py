"""The command line's API token and log format options: defaults from the env, bad values."""

from __future__ import annotations

import pytest

from workflow_manager.cli import build_parser, main

JOB = "3f2a6c1e-0b7d-4c44-9a55-2f1f0c1d2e3f"


@pytest.mark.parametrize(
    "command", [["status", JOB], ["cancel", JOB], ["retry", JOB], ["fork", JOB, "--from", "x"]]
)
def test_api_commands_take_the_token_from_the_env_or_the_flag(command):
    parser = build_parser({"WM_API_TOKEN": "from-env"})
    assert parser.parse_args(command).api_token == "from-env"
    assert parser.parse_args([*command, "--api-token", "flag"]).api_token == "flag"
    assert build_parser({}).parse_args(command).api_token is None


def test_submit_and_serve_take_the_token_and_an_empty_env_is_none():
    parser = build_parser({"WM_API_TOKEN": "t", "WM_LOG_FORMAT": "json"})
    assert parser.parse_args(["submit", "w"]).api_token == "t"
    args = parser.parse_args(["serve"])
    assert (args.api_token, args.log_format) == ("t", "json")
    assert build_parser({"WM_API_TOKEN": ""}).parse_args(["serve"]).api_token is None
    assert build_parser({}).parse_args(["serve"]).log_format == "text"


def test_an_empty_api_token_flag_is_a_usage_error(capsys):
    assert main(["serve", "--api-token", ""], env={}) == 2
    assert "--api-token is empty" in capsys.readouterr().err


def test_a_bad_log_format_from_the_env_is_a_usage_error(capsys):
    assert main(["serve"], env={"WM_LOG_FORMAT": "xml"}) == 2
    assert "WM_LOG_FORMAT must be text or json, got 'xml'" in capsys.readouterr().err


def test_help_names_the_options(capsys):
    with pytest.raises(SystemExit):
        build_parser({}).parse_args(["serve", "--help"])
    out = capsys.readouterr().out
    assert "--api-token" in out and "--log-format" in out and "WM_API_TOKEN" in out


def test_submit_takes_a_delay_in_seconds(capsys):
    parser = build_parser({})
    assert parser.parse_args(["submit", "w", "--delay", "2.5"]).delay == 2.5
    assert parser.parse_args(["submit", "w"]).delay is None
    for bad in ("soon", "-1", "nan"):
        with pytest.raises(SystemExit):
            parser.parse_args(["submit", "w", "--delay", bad])
        assert f"{bad!r} is not a delay in seconds" in capsys.readouterr().err


def test_signal_takes_a_job_a_step_and_a_json_object(capsys):
    args = build_parser({"WM_API_TOKEN": "t"}).parse_args(["signal", JOB, "approve"])
    assert (args.job_id, args.step, args.payload, args.api_token) == (JOB, "approve", "{}", "t")
    assert main(["signal", JOB, "approve", "--payload", "[1]"], env={}) == 2
    assert "--payload must be a JSON object, got list" in capsys.readouterr().err
