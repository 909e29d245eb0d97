"""The bridge's payload settings: its flags and BridgeSettings reach the Worker it builds."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from workflow_manager.bridge.routes import collect_routes
from workflow_manager.bridge.service import BridgeSettings, build_bridge
from workflow_manager.cli import main
from workflow_manager.config import parse_workflows

FILE = """\
workflows:
  - name: w
    steps:
      - name: score
        http: {url: "http://127.0.0.1:9/score"}
"""


async def test_the_bridge_worker_gets_the_payload_settings() -> None:
    routes = collect_routes(parse_workflows(FILE), {})
    settings = BridgeSettings(payload_stores=("main=file:///srv/p",), payload_ref_threshold=10)

    async with httpx.AsyncClient() as client:
        worker = build_bridge(routes, settings, client, {})
        unset = build_bridge(routes, BridgeSettings(), client, {})

    assert worker.settings.payload_stores == ("main=file:///srv/p",)
    assert worker.settings.payload_ref_threshold == 10
    assert unset.settings.payload_stores is None  # from WM_PAYLOAD_STORES at start


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--payload-store", "main"], "error: --payload-store: 'main' is not NAME=URL"),
        (
            ["--payload-store", "a=file:///x", "--payload-store", "a=file:///y"],
            "error: --payload-store: store 'a' is named twice",
        ),
    ],
)
def test_a_bad_store_flag_stops_the_bridge_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    config = tmp_path / "workflows.yaml"
    config.write_text(FILE)

    assert main(["bridge", "--config", str(config), *flags]) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and "Traceback" not in err


def test_a_bad_threshold_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bridge", "--payload-ref-threshold", "1e6"])

    assert exited.value.code == 2
    assert "--payload-ref-threshold: expected a whole number of bytes, got '1e6'" in (
        capsys.readouterr().err
    )
