"""A job through a real manager (`workflow-manager serve`) whose steps are HTTP steps."""

from __future__ import annotations

import json

from .httpserver import HttpRequest, HttpResponse

WORKFLOW = """
workflows:
  - name: scored
    steps:
      - name: enrich
        queue: "{p}.enrich"
        http: {url: "URL/enrich"}
      - name: score
        depends: [enrich]
        queue: "{p}.score"
        http:
          url: "URL/score"
          headers: {Authorization: "Bearer ${API_TOKEN}"}
          timeout: 5
        retries: 2
        retry_backoff: {initial: 0.1}
"""


async def test_a_job_runs_its_http_steps_through_the_bridge_with_retries(
    system, unique, bridge, http_server
):
    seen: list[HttpRequest] = []

    async def endpoint(request: HttpRequest) -> HttpResponse:
        seen.append(request)
        data = request.json()
        if request.path == "/enrich":
            return HttpResponse(200, json.dumps({"words": len(data["text"].split())}).encode())
        if request.headers["x-wm-attempt"] == "1":  # the first try fails: the manager retries
            return HttpResponse(503, b"warming up", "text/plain", "Service Unavailable")
        return HttpResponse(200, json.dumps({"score": data["words"] * 10}).encode())

    http_server.handler = endpoint
    yaml_text = WORKFLOW.replace("URL", http_server.url(""))
    sys = await system(yaml_text)
    process = await bridge(yaml_text.replace("{p}", unique), env={"API_TOKEN": "t0ken"})
    await process.wait_for_line(f"listening on {unique}.score")

    outcome = await sys.run("scored", {"text": "it was the best of times"})

    assert outcome.status == "completed", outcome.body
    assert outcome.body == {"score": 60}
    assert [(r.path, r.headers["x-wm-attempt"]) for r in seen] == [
        ("/enrich", "1"),
        ("/score", "1"),
        ("/score", "2"),
    ]
    assert seen[1].json() == {"words": 6} and seen[1].headers["x-wm-workflow"] == "scored"
    assert all(r.headers["authorization"] == "Bearer t0ken" for r in seen[1:])
    failed = f"job={outcome.correlation_id} step=score attempt=1 failed: HttpStatusError"
    assert any(failed in line and "'warming up'" in line for line in process.lines)
