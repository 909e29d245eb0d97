"""The bridge's pure parts: routes from a workflow file, header expansion, answers to outputs."""

from __future__ import annotations

import pytest

from workflow_manager.bridge.caller import body_preview, interpret
from workflow_manager.bridge.errors import BridgeConfigError, HttpBodyError, HttpStatusError
from workflow_manager.bridge.routes import collect_routes, display_url
from workflow_manager.config import parse_workflows

FILE = """\
workflows:
  - name: w
    steps:
      - name: worker-step
      - name: score
        depends: [worker-step]
        http:
          url: https://user:pw@api.example.com/score?key=abc
          headers: {Authorization: "Bearer ${API_TOKEN}", X-Team: "${TEAM}-blue", X-Plain: "p"}
      - name: fan
        task: t
    tasks:
      - name: t
        itemListKey: items
        steps:
          - name: child
            queue: shared-child
            http: {url: "http://10.0.0.1:8000/child", method: PATCH, timeout: 3}
    on_error:
      - name: alert
        http: {url: "https://hooks.example.com/alert"}
"""
ENV = {"API_TOKEN": "tok-123", "TEAM": "red"}


def test_every_http_step_gets_a_route_on_its_queue() -> None:
    routes = collect_routes(parse_workflows(FILE), ENV)

    assert list(routes) == ["score", "shared-child", "alert"]
    assert routes["score"].headers == {
        "Authorization": "Bearer tok-123",
        "X-Team": "red-blue",
        "X-Plain": "p",
    }
    assert routes["score"].secrets == ("tok-123", "red")
    assert routes["shared-child"].target == "PATCH http://10.0.0.1:8000/child"
    assert routes["shared-child"].where == "workflow 'w', task 't', step 'child'"
    assert routes["alert"].where == "workflow 'w', on_error step 'alert'"


def test_a_route_never_shows_its_secrets() -> None:
    route = collect_routes(parse_workflows(FILE), ENV)["score"]

    text = repr(route)

    assert text == (
        "<Route score -> POST https://user:******@api.example.com/score?... "
        "headers=[Authorization=******, X-Team=******, X-Plain=p]>"
    )
    assert route.redact("echo: Bearer tok-123 from red") == "echo: Bearer ****** from ******"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://api.example.com/v1/score", "https://api.example.com/v1/score"),
        ("http://127.0.0.1:8080/x?token=abc", "http://127.0.0.1:8080/x?..."),
        ("https://me:secret@host.example/", "https://me:******@host.example/"),
        ("https://me@host.example/#frag", "https://me@host.example/"),
    ],
)
def test_display_url_hides_passwords_and_queries(url: str, shown: str) -> None:
    assert display_url(url) == shown


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"TEAM": "red"},
            "workflow 'w', step 'score': header 'Authorization' names ${API_TOKEN}, which is not"
            " set; export API_TOKEN=... before starting the bridge",
        ),
        (
            {"API_TOKEN": "", "TEAM": "red"},
            "header 'Authorization' names ${API_TOKEN}, which is empty",
        ),
        ({"API_TOKEN": "x"}, "header 'X-Team' names ${TEAM}, which is not set"),
    ],
    ids=["unset", "empty", "second-variable"],
)
def test_a_missing_variable_is_a_start_up_error_naming_step_and_variable(environ, message) -> None:
    with pytest.raises(BridgeConfigError, match=message.replace("$", r"\$").replace("(", r"\(")):
        collect_routes(parse_workflows(FILE), environ)


def test_a_file_without_http_steps_has_nothing_to_serve() -> None:
    workflows = parse_workflows("workflows:\n  - name: w\n    steps: [{name: a}]\n")

    with pytest.raises(BridgeConfigError, match=r"no HTTP steps to serve: give a step `http:"):
        collect_routes(workflows, {})


def test_a_queue_shared_with_a_worker_step_is_refused() -> None:
    text = FILE + "  - name: v\n    steps: [{name: other, queue: score}]\n"

    with pytest.raises(BridgeConfigError) as caught:
        collect_routes(parse_workflows(text), ENV)

    assert str(caught.value) == (
        "workflow 'w', step 'score': queue 'score' is also the queue of workflow 'v', step"
        " 'other', which a worker serves; give the HTTP step its own `queue:`"
    )


def test_a_queue_shared_by_two_different_calls_is_refused() -> None:
    text = FILE + (
        "  - name: v\n    steps:\n      - name: other\n        queue: shared-child\n"
        "        http: {url: 'http://10.0.0.2/child'}\n"
    )

    with pytest.raises(BridgeConfigError, match="queue 'shared-child' is also the queue of"):
        collect_routes(parse_workflows(text), ENV)


def test_the_same_call_on_one_queue_in_two_workflows_is_one_route() -> None:
    text = FILE + (
        "  - name: v\n    steps:\n      - name: again\n        queue: shared-child\n"
        "        http: {url: 'http://10.0.0.1:8000/child', method: PATCH, timeout: 3}\n"
    )

    assert "shared-child" in collect_routes(parse_workflows(text), ENV)


@pytest.mark.parametrize(
    ("status", "body", "output"),
    [
        (200, b'{"score": 0.9}', {"score": 0.9}),
        (201, b' {"id": "a"} ', {"id": "a"}),
        (204, b"", {}),
        (200, b"  \n", {}),
    ],
)
def test_a_2xx_json_object_is_the_step_output(status: int, body: bytes, output: dict) -> None:
    assert interpret("POST http://h/x", status, "OK", body) == output


@pytest.mark.parametrize(
    ("status", "reason", "body", "error", "message"),
    [
        (500, "Internal Server Error", b"boom", HttpStatusError,
         "POST http://h/x answered 500 Internal Server Error: 'boom'"),
        (404, "", b"", HttpStatusError, "POST http://h/x answered 404: (empty body)"),
        (302, "Found", b"", HttpStatusError, "POST http://h/x answered 302 Found: (empty body)"),
        (200, "OK", b"<html>", HttpBodyError,
         "POST http://h/x answered 200 OK with a body that is not JSON: '<html>'"),
        (200, "OK", b"\xff\xfe", HttpBodyError, "with a body that is not JSON: '\ufffd\ufffd'"),
        (200, "OK", b"null", HttpBodyError, "answered 200 OK with a JSON null, not an object"),
        (200, "OK", b"[1]", HttpBodyError, "answered 200 OK with a JSON list, not an object"),
    ],
)  # fmt: skip
def test_other_answers_are_errors_naming_status_and_body(status, reason, body, error, message):
    with pytest.raises(error) as caught:
        interpret("POST http://h/x", status, reason, body)

    assert message in str(caught.value)


def test_body_preview_is_one_short_line() -> None:
    preview = body_preview(b"<html>\n  <body>" + b"x" * 500 + b"</body>\n</html>")

    assert preview.startswith("'<html> <body>xxx") and preview.endswith("...'")
    assert len(preview) == 205


@pytest.mark.parametrize("concurrency", [0, -1, 2.5, True])
def test_bridge_settings_reject_a_bad_concurrency(concurrency: object) -> None:
    from workflow_manager.bridge.service import BridgeSettings

    with pytest.raises(BridgeConfigError, match="concurrency: "):
        BridgeSettings(concurrency=concurrency)  # type: ignore[arg-type]
