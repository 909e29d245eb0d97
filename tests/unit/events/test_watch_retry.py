"""`workflow-manager watch` while the manager running the job cannot be asked (several
managers, its partition moving): `GET /api/events` answers 503, and watch tries again after
`Retry-After` instead of giving up. The API is played by an httpx mock transport."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import httpx
import pytest

from workflow_manager.errors import ApiUnreachable, ManagerError
from workflow_manager.events.sse import format_event
from workflow_manager.watch import watch_job

JOB = "3f2a0c4e-8d7b-4e4f-9a51-0c2b7d1e6a10"
AWAY = {"error": f"job {JOB} is in partition 3, which another manager runs, and no manager "
        "holds it now (it is being taken over); try again shortly"}  # fmt: skip


@dataclass
class Api:
    """Answers `GET /api/events` with 503 `refusals` times, then with a stream whose job
    completes; `GET /api/job` says running at first, completed after."""

    refusals: int
    status: int = 503
    job_reads: int = 0
    asked: list[str] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(request.url.path)
        if request.url.path == "/api/events":
            if self.refusals > 0:
                self.refusals -= 1
                return httpx.Response(self.status, json=AWAY, headers={"Retry-After": "0"})
            done = format_event("job.completed", {"type": "job.completed", "job": JOB,
                                                  "status": "completed"}, "1-1")  # fmt: skip
            return httpx.Response(200, content=done.encode(),
                                  headers={"content-type": "text/event-stream"})  # fmt: skip
        self.job_reads += 1  # the first read: running; the one after its event: completed
        status = "running" if self.job_reads == 1 else "completed"
        body = {"uuid": JOB, "workflow": "wf", "status": status}
        return httpx.Response(200, content=json.dumps(body).encode())


async def test_a_503_is_tried_again_until_the_stream_opens() -> None:
    api = Api(refusals=2)
    out = io.StringIO()
    status = await watch_job("http://wm", JOB, out, transport=httpx.MockTransport(api))
    assert status == "completed"
    assert api.asked[:3] == ["/api/events"] * 3
    assert "completed" in out.getvalue()


async def test_a_503_that_lasts_gives_up_naming_why() -> None:
    api = Api(refusals=1_000_000)
    transport = httpx.MockTransport(api)
    with pytest.raises(ApiUnreachable, match="partition 3, which another manager runs"):
        await watch_job("http://wm", JOB, io.StringIO(), transport=transport, reconnect_for_s=0.3)
    assert api.asked.count("/api/events") >= 2


async def test_another_refusal_is_no_reason_to_wait() -> None:
    api = Api(refusals=1, status=400)
    with pytest.raises(ManagerError, match="GET /api/events answered 400: job"):
        await watch_job("http://wm", JOB, io.StringIO(), transport=httpx.MockTransport(api))
    assert api.asked == ["/api/events"]
