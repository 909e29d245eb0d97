"""`x-payload-refs` on what the manager sends: a step request or a job's outcome whose body
holds references says how many `$ref` members it has; any other has no such header."""

from __future__ import annotations

import orjson

from workflow_manager.transport.message import outcome_notice, step_request

REF = {"$ref": "wm://main/job/" + "0" * 64, "sha256": "0" * 64, "size": 12}


def _request(body: dict) -> dict:
    return dict(
        step_request("q", orjson.dumps(body), "job:step", "wm", "w", 1, "job:step:1").headers
    )


def test_a_request_holding_references_counts_them():
    assert _request({"a": REF, "b": [REF, {"c": 1}]})["x-payload-refs"] == 2


def test_a_request_without_references_has_no_header_even_with_the_text_in_a_string():
    assert "x-payload-refs" not in _request({"note": 'a "$ref": in text', "n": 1})


def test_an_outcome_whose_result_holds_a_reference_says_so():
    notice = outcome_notice("reply", "job", "completed", orjson.dumps({"r": REF}), None)
    assert notice.headers == {"x-status": "completed", "x-payload-refs": 1}
    plain = outcome_notice("reply", "job", "completed", b'{"r": 1}', None)
    assert plain.headers == {"x-status": "completed"}
