"""The documentation site builds with `mkdocs build --strict` (a broken link, a page left out
of the nav, a missing anchor fail it), offline, and its generated reference pages say
everything the code holds: every `STRATA_*` setting of `strata.foundation.config.Settings` and every
operation of the served OpenAPI document. README and pages stay short enough to read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from strata.api.app import create_app
from strata.foundation.config import ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 250
PAGE_MAX_LINES = 600


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def test_the_site_builds_strictly_with_every_page(site):
    """Given mkdocs.yml and docs/
    When `mkdocs build --strict` runs
    Then it succeeds, and every Markdown page under docs/ became a page of the site (strict
    mode also refuses a page left out of the nav), and the home page carries the README's
    comparison (control: its nav and the comparison's table)."""
    pages = [p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts]
    assert len(pages) >= 25
    for page in pages:
        rel = page.relative_to(ROOT / "docs").with_suffix("")
        built = site / ("index.html" if rel.name == "index" and rel.parent == Path(".")
                        else rel.parent / "index.html" if rel.name == "index"
                        else rel / "index.html")
        assert built.is_file(), f"{page} was not built ({built})"
    home = (site / "index.html").read_text()
    assert "Truth maintenance" in home and "Graphiti" in home and "<table>" in home


def test_the_site_fetches_nothing_from_elsewhere(site):
    """Given the built site
    When its pages' scripts, stylesheets and fonts are listed
    Then every one is the site's own (control: the pages do load scripts and stylesheets)."""
    html = (site / "concepts" / "memories" / "index.html").read_text()
    loaded = re.findall(r'<script[^>]*\ssrc="([^"]+)"|<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"',
                        html)
    sources = [a or b for a, b in loaded]
    assert any(s.endswith(".js") for s in sources) and any(s.endswith(".css") for s in sources)
    assert not [s for s in sources if re.match(r"(https?:)?//", s)], sources
    assert "fonts.googleapis" not in html


def test_the_configuration_page_lists_every_setting(site):
    """Given the settings object
    When the configuration page is built
    Then every field appears as its STRATA_ variable with the comment written above it in
    config.py (control: a setting's comment, and the client's variables)."""
    page = text_of((site / "reference" / "configuration" / "index.html").read_text())
    missing = [f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields
               if f"{ENV_PREFIX}{name.upper()}" not in page]
    assert not missing and len(Settings.model_fields) > 50, missing
    assert "How long a checkout waits for a pooled connection" in page
    assert "STRATA_URL" in page and "STRATA_KEY" in page


def test_the_operations_page_lists_every_operation(site):
    """Given the OpenAPI document the server serves
    When the operations page is built
    Then every operation appears with its method, path and operationId, and the site carries
    the document itself (control: the operation count)."""
    document = create_app(settings=Settings(embedding_dim=384, rate_limit=False,
                                            home=Path("/nonexistent-strata-home"))).openapi()
    page = text_of((site / "reference" / "operations" / "index.html").read_text())
    operations = [(m.upper(), path, op["operationId"]) for path, ops in document["paths"].items()
                  for m, op in ops.items()]
    assert len(operations) >= 40
    for method, path, operation_id in operations:
        assert f"{method} {path}" in page and operation_id in page, (method, path)
    served = json.loads((site / "reference" / "openapi.json").read_text())
    assert served["paths"].keys() == document["paths"].keys()


def test_readme_and_pages_stay_short():
    """Given the README and the docs pages
    When their lines are counted
    Then the README is a ten-minute read (<= 250 lines) and no page passes ~600 (control:
    the longest page is counted, not skipped)."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= README_MAX_LINES
    sizes = {p: len(p.read_text().splitlines()) for p in (ROOT / "docs").rglob("*.md")}
    assert max(sizes.values()) > 100
    assert not {p: n for p, n in sizes.items() if n > PAGE_MAX_LINES}
