"""The generated reference pages (HTTP API, command line) and the repository-link check."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace

import pytest

from docs_gen import cli_page, hooks, openapi_page, repo_links

ROOT = Path(__file__).resolve().parents[3]

TINY_DOCUMENT = {
    "info": {"title": "t", "version": "9.9", "description": "The API."},
    "tags": [{"name": "jobs", "description": "Jobs."}],
    "paths": {
        "/api/job/{job_id}": {
            "get": {
                "tags": ["jobs"],
                "summary": "Get Job",
                "description": "One job | its steps.",
                "parameters": [
                    {"name": "job_id", "in": "path", "required": True,
                     "schema": {"type": "string", "format": "uuid"}},
                ],
                "responses": {
                    "200": {"description": "OK", "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/Job"}}}},
                    "404": {"description": "Not Found"},
                },
            }
        }
    },
    "components": {"schemas": {"Job": {
        "description": "A job.", "required": ["uuid"],
        "properties": {"uuid": {"type": "string"},
                       "steps": {"type": "array", "items": {"type": "string"}}},
    }}},
}  # fmt: skip


def test_an_operation_gets_its_parameters_answers_and_schema_links() -> None:
    page = openapi_page.render(TINY_DOCUMENT)
    assert "#### `GET /api/job/{job_id}` {#get-api-job-job-id}" in page
    assert "| `job_id` | path | string (uuid) | yes |  |" in page
    assert "| 200 | [Job](#schema-job) | OK |" in page
    assert "#### Job {#schema-job}" in page
    assert "| `steps` | list of string | no |  |" in page


def test_every_route_of_the_managers_openapi_document_is_on_the_page() -> None:
    document = openapi_page.api_document()
    page = openapi_page.render(document)
    for path, operations in document["paths"].items():
        for method in operations:
            assert f"`{method.upper()} {path}`" in page
    assert "/ui/login" in document["paths"]  # rendered with a token: every optional route


def test_every_command_and_subcommand_has_its_help_on_the_page() -> None:
    page = cli_page.render(cli_page.parsers())
    for name in ("serve", "validate", "submit", "signal", "journal", "bridge", "conformance"):
        assert f"### `workflow-manager {name}`" in page
    assert "#### `workflow-manager dead-letters replay`" in page
    assert "### `pyworker exec`" in page


def test_help_is_rendered_at_a_fixed_width_whatever_the_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def page(columns: str) -> str:
        monkeypatch.setenv("COLUMNS", columns)
        parser = argparse.ArgumentParser(prog="tool", description="word " * 60)
        return cli_page.render([parser])

    assert page("40") == page("200")


def test_the_hook_fills_in_a_generated_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(hooks.GENERATORS, "cli", lambda: "GENERATED\n")
    monkeypatch.setattr(hooks, "_rendered", {})
    page = SimpleNamespace(file=SimpleNamespace(abs_src_path=str(ROOT / "docs/reference/cli.md")))
    config = {"docs_dir": str(ROOT / "docs")}
    out = hooks.on_page_markdown("# CLI\n\n<!-- generated: cli -->\n", page, config, None)
    assert out == "# CLI\n\nGENERATED\n\n"


def rewrite(markdown: str, repo_url: str | None = None) -> tuple[str, list[str]]:
    reports: list[str] = []
    page = ROOT / "docs" / "guides" / "page.md"
    out = repo_links.rewrite(markdown, page, ROOT / "docs", ROOT, reports.append, repo_url)
    return out, reports


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("see [the bench](../../bench/README.md).", "see the bench (`bench/README.md`)."),
        ("[`jsworker/`](../../jsworker/) is", "`jsworker/` is"),
        ("[protocol](../protocol.md#queues)", "[protocol](../protocol.md#queues)"),
        ("```sh\n[x](../../nothing-here)\n```\n", "```sh\n[x](../../nothing-here)\n```\n"),
        ("[site](https://example.com/a)", "[site](https://example.com/a)"),
    ],
)
def test_links_that_leave_docs_become_repository_paths(markdown: str, expected: str) -> None:
    assert rewrite(markdown) == (expected, [])


def test_a_link_to_a_missing_repository_file_is_reported() -> None:
    out, reports = rewrite("[gone](../../no/such/file.md)")
    assert out == "[gone](../../no/such/file.md)"
    assert reports == ["docs/guides/page.md links to '../../no/such/file.md', which is not in "
                       "the repository"]  # fmt: skip


def test_with_a_repo_url_the_link_points_into_the_repository() -> None:
    out, _ = rewrite("[bench](../../bench/README.md#x)", repo_url="https://git.example/wm/")
    assert out == "[bench](https://git.example/wm/blob/main/bench/README.md#x)"
