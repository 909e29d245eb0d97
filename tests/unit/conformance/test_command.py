"""`workflow-manager conformance`: arguments become settings; bad ones exit 2 naming the option."""

from __future__ import annotations

import subprocess
import sys

import pytest

from workflow_manager.cli import build_parser, main
from workflow_manager.conformance.command import settings_from_args
from workflow_manager.conformance.settings import DEFAULT_INPUT, KitSettings, SettingsError

ENV = {"AMQP_URL": "amqp://u:s3cret@rabbit:5672/"}


def parse(*argv: str) -> KitSettings:
    return settings_from_args(build_parser(ENV).parse_args(["conformance", *argv]))


def test_defaults_come_from_the_environment_and_the_kit():
    settings = parse("echo")
    assert (settings.queue, settings.amqp_url) == ("echo", "amqp://u:s3cret@rabbit:5672/")
    assert settings.input == DEFAULT_INPUT
    assert (settings.failing_input, settings.timeout_s, settings.echo) == (None, 10.0, False)
    assert (settings.payload_store, settings.store_spec) == (None, None)
    assert "s3cret" not in repr(settings)


def test_options_are_parsed():
    settings = parse(
        "q", "--input", '{"a": 1}', "--failing-input", '{"b": 2}', "--timeout", "2.5",
        "--amqp-url", "amqp://localhost/",
    )  # fmt: skip
    assert (settings.input, settings.failing_input) == ({"a": 1}, {"b": 2})
    assert (settings.timeout_s, settings.amqp_url) == (2.5, "amqp://localhost/")


def test_the_payload_store_is_a_named_store_url():
    settings = parse("q", "--payload-store", "main=file:///srv/wm-payloads")
    assert settings.store_spec is not None
    assert (settings.store_spec.name, settings.store_spec.url) == (
        "main",
        "file:///srv/wm-payloads",
    )
    postgres = parse("q", "--payload-store", "pg=postgresql://wm:s3cret@db/wm")
    assert postgres.store_spec is not None and postgres.store_spec.name == "pg"
    assert "s3cret" not in repr(postgres) and "pg=postgresql://wm:***@db/wm" in repr(postgres)


def test_echo_fails_the_worker_with_the_echo_contracts_input_unless_told_otherwise():
    assert parse("q", "--echo").failing_input == {"fail": True}
    assert parse("q", "--echo", "--failing-input", '{"x": 0}').failing_input == {"x": 0}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input", "{nope"], "--input is not valid JSON"),
        (["--input", "[1]"], "--input must be a JSON object (a step input), got list"),
        (["--failing-input", '"x"'], "--failing-input must be a JSON object"),
        (["--timeout", "0"], "--timeout must be a number of seconds above 0, got 0.0"),
        (["--payload-store", "file:///srv/p"], "--payload-store: 'file:///srv/p' is not NAME=URL"),
        (["--payload-store", "Main=file:///srv/p"], "store name 'Main' must match [a-z0-9]"),
        (["--payload-store", "main=s3://bucket"], "store 'main' has URL scheme 's3'"),
        (["--payload-store", "main=file://srv/p"], "must be file:///<absolute directory>"),
        (["--payload-store", "main="], "--payload-store: 'main=' is not NAME=URL"),
    ],
)
def test_bad_values_exit_2_with_a_message_naming_the_option(argv, message, capsys):
    assert main(["conformance", "q", *argv], env=ENV) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert "Traceback" not in err


def test_a_bad_payload_store_does_not_show_its_password(capsys):
    argv = ["conformance", "q", "--payload-store", "postgresql://wm:s3cret@db/wm"]
    assert main(argv, env=ENV) == 2
    err = capsys.readouterr().err
    assert "is not NAME=URL" in err and "postgresql://wm:***@db/wm" in err
    assert "s3cret" not in err


def test_settings_refuse_an_empty_queue():
    with pytest.raises(SettingsError, match="QUEUE is empty"):
        KitSettings(queue="", amqp_url="amqp://localhost/")


def test_help_explains_rules_and_exit_codes_with_examples(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["conformance", "--help"], env=ENV)
    text = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "workflow-manager conformance echo --echo" in text
    assert "ack-after-reply" in text and "3 RabbitMQ unreachable" in text
    assert "--payload-store NAME=URL" in text and "payload-ref-missing" in text


def test_building_the_cli_does_not_load_aio_pika():
    code = (
        "import sys, workflow_manager.cli; workflow_manager.cli.build_parser({}); "
        "print('aio_pika' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
