"""HTTP steps in the workflow YAML: `http: {url, method, headers, timeout}` and its errors."""

from __future__ import annotations

import textwrap

import pytest

from workflow_manager.config import parse_workflows
from workflow_manager.config.describe import describe_workflows
from workflow_manager.errors import ConfigError

GOOD = """\
workflows:
  - name: score
    steps:
      - name: enrich
        queue: http-enrich
        http:
          url: https://api.example.com/enrich?v=2
          headers:
            Authorization: "Bearer ${API_TOKEN}"
            X-Trace: "${TRACE_ID}-${API_TOKEN}"
          timeout: 2.5
          method: PUT
        retries: 3
      - name: notify
        depends: [enrich]
        http: {url: "http://127.0.0.1:9000/hook"}
"""


def test_an_http_step_parses_with_its_defaults() -> None:
    steps = parse_workflows(GOOD, "wf.yaml")["score"].steps

    enrich, notify = steps[0], steps[1]
    assert enrich.http is not None and notify.http is not None
    assert enrich.queue_name == "http-enrich" and notify.queue_name == "notify"
    assert enrich.http.method == "PUT" and enrich.http.timeout == 2.5
    assert enrich.http.env_vars == ("API_TOKEN", "TRACE_ID")
    assert notify.http.method == "POST" and notify.http.timeout == 10.0
    assert notify.http.headers == {} and notify.http.env_vars == ()


def test_validate_describes_http_steps() -> None:
    text = describe_workflows(parse_workflows(GOOD, "wf.yaml"))

    assert "step 'notify': depends on enrich; http POST 'http://127.0.0.1:9000/hook'" in text
    assert "queue 'http-enrich'; retries 3" in text


def test_a_step_without_http_keeps_its_content_hash() -> None:
    plain = "workflows:\n  - name: w\n    steps:\n      - name: a\n"
    with_null = plain + "        http: null\n"

    assert parse_workflows(plain)["w"].content_hash == parse_workflows(with_null)["w"].content_hash


def _problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_workflows(textwrap.dedent(text), "wf.yaml")
    return info.value.problems


STEP = "workflows:\n  - name: w\n    steps:\n      - name: a\n"
WHERE = "workflow 'w', step 'a'"

CASES = [
    (
        "not http",
        "        http: {url: 'ftp://files.example.com/x'}\n",
        f"wf.yaml:5: {WHERE}: http.url: 'ftp://files.example.com/x' is not an http(s) URL;"
        " write e.g. url: https://api.example.com/score",
    ),
    (
        "no host",
        "        http: {url: 'https:///path'}\n",
        f"wf.yaml:5: {WHERE}: http.url: 'https:///path' is not an http(s) URL;"
        " write e.g. url: https://api.example.com/score",
    ),
    (
        "missing url",
        "        http: {method: POST}\n",
        f"wf.yaml:5: {WHERE}: missing required field 'url'",
    ),
    (
        "GET",
        "        http: {url: 'http://x.example', method: GET}\n",
        f"wf.yaml:5: {WHERE}: http.method: expected one of 'POST', 'PUT' or 'PATCH', got 'GET'",
    ),
    (
        "timeout text",
        "        http: {url: 'http://x.example', timeout: 10s}\n",
        f"wf.yaml:5: {WHERE}: http.timeout: expected a number of seconds, got '10s';"
        " write 10, without quotes or units",
    ),
    (
        "timeout zero",
        "        http: {url: 'http://x.example', timeout: 0}\n",
        f"wf.yaml:5: {WHERE}: http.timeout: must be more than 0 seconds, got 0 (a number);"
        " it limits each HTTP request (default 10)",
    ),
    (
        "bad header name",
        "        http: {url: 'http://x.example', headers: {'Auth Token': x}}\n",
        f"wf.yaml:5: {WHERE}: http.headers: invalid header name 'Auth Token': letters, digits"
        " and !#$%&'*+-.^_`|~ only",
    ),
    (
        "broken reference",
        "        http: {url: 'http://x.example', headers: {Auth: 'Bearer ${API-TOKEN}'}}\n",
        f"wf.yaml:5: {WHERE}: http.headers: header 'Auth': a '${{' starts no variable"
        " reference; write ${NAME} with NAME made of letters, digits and '_'",
    ),
    (
        "header value not text",
        "        http: {url: 'http://x.example', headers: {X-Count: 3}}\n",
        f"wf.yaml:5: {WHERE}: http.headers.X-Count: expected a string, got 3 (a number);"
        " put it in quotes to make it text",
    ),
    (
        "unknown field",
        "        http: {url: 'http://x.example', timout: 3}\n",
        f"wf.yaml:5: {WHERE}: unknown field 'timout' (allowed: url, method, headers, timeout);"
        " did you mean 'timeout'?",
    ),
    (
        "http and task",
        "        task: t\n        http: {url: 'http://x.example'}\n"
        "    tasks: [{name: t, itemListKey: xs, steps: [{name: s}]}]\n",
        f"wf.yaml:6: {WHERE}: a step has either 'task' (child jobs) or 'http' (a call through"
        " the bridge), not both",
    ),
]


@pytest.mark.parametrize(("tail", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_http_steps_are_reported_with_file_and_line(tail: str, expected: str) -> None:
    assert _problems(STEP + tail) == [expected]
