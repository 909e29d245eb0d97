"""The HTTP API reference page, rendered from the manager's own OpenAPI document.

`api_document()` builds the app the way `serve` does (every optional part on: the event
stream, dead letters, metrics, an API token), with no broker or journal behind it: only the
document is read. `render(document)` turns it into Markdown, one section per tag.
"""

from __future__ import annotations

from typing import Any

__all__ = ["api_document", "render"]

JsonObject = dict[str, Any]

# A token of the minimum length; only its presence matters (the 401 answers, the login routes).
_PLACEHOLDER_TOKEN = "docs-placeholder-token-0123456789"


def api_document() -> JsonObject:
    """The OpenAPI document of an app with every optional route installed."""
    from workflow_manager.api import create_app
    from workflow_manager.api.token import ApiToken
    from workflow_manager.api.webhooks import Webhooks
    from workflow_manager.deadletters import DeadLetterQueue
    from workflow_manager.events.hub import EventHub
    from workflow_manager.metrics import Metrics

    app = create_app(
        object(),  # type: ignore[arg-type]  # the document never calls the service
        api_token=ApiToken(_PLACEHOLDER_TOKEN),
        events=EventHub(),
        dead_letters=DeadLetterQueue("amqp://guest:guest@localhost:5672/"),
        metrics=Metrics({}),
        webhooks=Webhooks(),
    )
    return app.openapi()


def render(document: JsonObject) -> str:
    """The reference as Markdown (headings from level 3): operations by tag, then schemas."""
    lines: list[str] = [f"Generated from the OpenAPI document of version {_version(document)}."]
    lines += ["", _cell(document.get("info", {}).get("description", ""), table=False), ""]
    for tag, operations in _by_tag(document).items():
        lines += [f"### {tag}", ""]
        if description := _tag_description(document, tag):
            lines += [description, ""]
        for method, path, operation in operations:
            lines += _operation(method, path, operation)
    schemas = document.get("components", {}).get("schemas", {})
    if schemas:
        lines += ["### Schemas", ""]
        for name in sorted(schemas):
            lines += _schema_section(name, schemas[name])
    return "\n".join(lines).rstrip() + "\n"


def _version(document: JsonObject) -> str:
    return str(document.get("info", {}).get("version", "?"))


def _by_tag(document: JsonObject) -> dict[str, list[tuple[str, str, JsonObject]]]:
    """Operations by their first tag, tags in the document's declared order."""
    declared = [tag["name"] for tag in document.get("tags", [])]
    groups: dict[str, list[tuple[str, str, JsonObject]]] = {name: [] for name in declared}
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            tag = (operation.get("tags") or ["other"])[0]
            groups.setdefault(tag, []).append((method.upper(), path, operation))
    return {tag: ops for tag, ops in groups.items() if ops}


def _tag_description(document: JsonObject, tag: str) -> str:
    for entry in document.get("tags", []):
        if entry.get("name") == tag:
            return str(entry.get("description", ""))
    return ""


def _anchor(*parts: str) -> str:
    text = "".join(char if char.isalnum() else " " for char in "-".join(parts).lower())
    return "-".join(text.split())


def _operation(method: str, path: str, operation: JsonObject) -> list[str]:
    lines = [f"#### `{method} {path}` {{#{_anchor(method, path)}}}", ""]
    if summary := operation.get("summary"):
        lines += [f"**{summary}.** " + _cell(operation.get("description", ""), table=False), ""]
    parameters = operation.get("parameters", [])
    if parameters:
        lines += [
            "| parameter | in | type | required | description |",
            "| --- | --- | --- | --- | --- |",
        ]
        for parameter in parameters:
            schema = parameter.get("schema") or _content_schema(parameter.get("content", {}))
            lines.append(
                f"| `{parameter['name']}` | {parameter['in']} | {_type(schema)} | "
                f"{'yes' if parameter.get('required') else 'no'} | "
                f"{_cell(parameter.get('description') or schema.get('description', ''))} |"
            )
        lines.append("")
    if body := operation.get("requestBody"):
        lines += [_request_body(body), ""]
    lines += ["| status | body | meaning |", "| --- | --- | --- |"]
    for status, response in sorted(operation.get("responses", {}).items()):
        schema = _content_schema(response.get("content", {}))
        shape = _type(schema) if schema else "–"
        lines.append(f"| {status} | {shape} | {_cell(response.get('description', ''))} |")
    return [*lines, ""]


def _request_body(body: JsonObject) -> str:
    content = body.get("content", {})
    kinds = ", ".join(f"`{kind}`" for kind in content) or "none"
    required = "required" if body.get("required") else "optional"
    schema = _content_schema(content)
    shape = f": {_type(schema)}" if schema else ""
    text = _cell(body.get("description", ""), table=False)
    return f"Request body ({kinds}, {required}){shape}. {text}".rstrip()


def _content_schema(content: JsonObject) -> JsonObject:
    for media in content.values():
        schema = media.get("schema")
        if isinstance(schema, dict):
            return schema
    return {}


def _schema_section(name: str, schema: JsonObject) -> list[str]:
    lines = [f"#### {name} {{#{_schema_anchor(name)}}}", ""]
    if description := schema.get("description"):
        lines += [_cell(description, table=False), ""]
    properties = schema.get("properties", {})
    if not properties:
        return [*lines, f"Type: {_type({k: v for k, v in schema.items() if k != 'title'})}.", ""]
    required = set(schema.get("required", []))
    lines += ["| field | type | required | description |", "| --- | --- | --- | --- |"]
    for field, spec in properties.items():
        lines.append(
            f"| `{field}` | {_type(spec)} | {'yes' if field in required else 'no'} | "
            f"{_cell(spec.get('description', ''))} |"
        )
    return [*lines, ""]


def _schema_anchor(name: str) -> str:
    return "schema-" + _anchor(name)


def _type(schema: JsonObject) -> str:
    """A short, readable type: `string`, `list of [Job](#schema-job)`, `integer or null`."""
    if ref := schema.get("$ref"):
        name = str(ref).rsplit("/", 1)[-1]
        return f"[{name}](#{_schema_anchor(name)})"
    for combinator in ("anyOf", "oneOf", "allOf"):
        if options := schema.get(combinator):
            joiner = " and " if combinator == "allOf" else " or "
            return joiner.join(_type(option) for option in options)
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'])}"
    if isinstance(kind, list):
        return " or ".join(str(each) for each in kind)
    text = str(kind or "any")
    return f"{text} ({schema['format']})" if "format" in schema else text


def _cell(text: str, *, table: bool = True) -> str:
    """Text for a table cell (one line, pipes escaped), or as written for a paragraph."""
    if not table:
        return str(text).strip()
    return " ".join(str(text).split()).replace("|", "\\|")
