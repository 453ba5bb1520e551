"""MkDocs hook: the reference pages that are generated from the code at build time, so they
cannot drift from it.

- ``reference/configuration.md``: every field of :class:`strata.foundation.config.Settings` as its
  ``STRATA_*`` variable, with its type, default and bounds, and the comment written above it
  in ``src/strata/foundation/config.py`` (the settings' own documentation).
- ``index.md``: the README's "Why strata" and "The parts", so the site's home page and the
  README say the same thing from one text.
- ``reference/operations.md``: every operation of the OpenAPI document the server serves
  (``create_app().openapi()``: no database, no network), by tag, with its summary,
  description, body and answers; the document itself is written beside the site as
  ``openapi.json``.

The checkout's ``src`` comes first on ``sys.path``, so a build describes this code whatever
is installed.
"""

from __future__ import annotations

import ast
import functools
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_MARK = "<!-- generated: settings -->"
OPERATIONS_MARK = "<!-- generated: operations -->"
README_MARK = "<!-- generated: readme -->"
README_SECTIONS = ("## Why strata", "## The parts")


def _strata_on_path() -> None:
    src = str(ROOT / "src")
    if sys.path[:1] != [src]:
        sys.path.insert(0, src)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if SETTINGS_MARK in markdown:
        markdown = markdown.replace(SETTINGS_MARK, settings_markdown())
    if README_MARK in markdown:
        markdown = markdown.replace(README_MARK, readme_sections())
    if OPERATIONS_MARK in markdown:
        markdown = markdown.replace(OPERATIONS_MARK, operations_markdown(openapi_document()))
    return markdown


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "reference/openapi.json",
                                content=json.dumps(openapi_document(), indent=1)))
    return files


def readme_sections() -> str:
    """README_SECTIONS of the README, each up to the next second-level heading, with its links
    into docs/ made relative to the site."""
    text = (ROOT / "README.md").read_text()
    out = []
    for heading in README_SECTIONS:
        start = text.index(heading)
        end = text.find("\n## ", start + len(heading))
        out.append(text[start:end if end != -1 else None].strip())
    return "\n\n".join(out).replace("](docs/", "](") + "\n"


# -- configuration ----------------------------------------------------------------------------

def settings_groups(source: str) -> list[tuple[str, list[str]]]:
    """(comment, field names) for each run of fields in class Settings: the comment block
    written above a run applies to every field of it, up to the next blank line or comment."""
    tree = ast.parse(source)
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings"]
    lines = source.splitlines()
    groups: list[tuple[str, list[str]]] = []
    previous_end = None
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above, i = [], node.lineno - 2
        while i >= 0 and lines[i].strip().startswith("#"):
            above.insert(0, lines[i].strip().lstrip("#").strip())
            i -= 1
        continued = (not above and previous_end is not None and groups
                     and all(lines[j].strip() for j in range(previous_end, node.lineno - 1)))
        if continued:
            groups[-1][1].append(node.target.id)
        else:
            groups.append((" ".join(above), [node.target.id]))
        previous_end = node.end_lineno
    return groups


def _bounds(field: Any) -> str:
    out = []
    for item in field.metadata:
        for name, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(item, name, None)
            if value is not None:
                out.append(f"{sign} {value}")
    return ", ".join(out)


def _type(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if not getattr(annotation, "__args__", None) else None
    text = text or str(annotation).replace("typing.", "").replace("pathlib.", "")
    return text.replace(" | ", " or ")  # a pipe would split the table's cell


def settings_markdown() -> str:
    _strata_on_path()
    from strata.foundation.config import ENV_PREFIX, Settings

    source = (ROOT / "src" / "strata" / "foundation" / "config.py").read_text()
    out = []
    for comment, names in settings_groups(source):
        rows = []
        for name in names:
            field = Settings.model_fields[name]
            default = field.default
            shown = "unset" if default is None else f"`{default!s}`" if default != "" else "empty"
            rows.append(f"| `{ENV_PREFIX}{name.upper()}` | `{_type(field.annotation)}` | {shown} "
                        f"| {_bounds(field)} |")
        if comment:
            out.append(comment + "\n")
        out.append("| variable | type | default | bounds |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(out)


# -- HTTP operations --------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    _strata_on_path()
    from pathlib import Path as _Path

    from strata.api.app import create_app
    from strata.foundation.config import Settings

    # The settings the document depends on, fixed: not the builder's environment.
    settings = Settings(embedding_dim=384, home=_Path("/nonexistent-strata-home"),
                        rate_limit=False)
    return create_app(settings=settings).openapi()


def _schema_name(content: dict[str, Any]) -> str:
    schema = content.get("application/json", {}).get("schema", {})
    ref = schema.get("$ref") or schema.get("items", {}).get("$ref") or ""
    return ref.rsplit("/", 1)[-1]


def operations_markdown(document: dict[str, Any]) -> str:
    by_tag: dict[str, list[str]] = {}
    for path, methods in document["paths"].items():
        for method, op in methods.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            body = _schema_name(op.get("requestBody", {}).get("content", {}))
            answers = ", ".join(
                f"{status}" + (f" `{name}`" if (name := _schema_name(r.get("content", {})))
                               and status.startswith("2") else "")
                for status, r in sorted(op["responses"].items()))
            params = ", ".join(f"`{p['name']}`" for p in op.get("parameters", []))
            lines = [f"### `{method.upper()} {path}`", "", f"**{op.get('summary', '')}** "
                     f"(`operationId`: `{op.get('operationId', '')}`)", ""]
            description = op.get("description", "").strip()
            if description:
                lines += [description, ""]
            if params:
                lines += [f"Parameters: {params}.", ""]
            if body:
                lines += [f"Body: `{body}`.", ""]
            lines += [f"Answers: {answers}.", ""]
            by_tag.setdefault((op.get("tags") or ["other"])[0], []).append("\n".join(lines))
    out = []
    for tag, ops in by_tag.items():
        out.append(f"## {tag}\n")
        out.extend(ops)
    return "\n".join(out)
