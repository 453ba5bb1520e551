"""The log and audit scan over the whole test run: no log record and no audit row may carry
memory content or context, message text, query text or key material.

Every record any logger creates during a test is captured (``logging.Logger.handle`` is
observed, before any handler or propagation decides where it goes): its message, its
``extra`` fields, and its formatted exception, which is where a database error quoting a
row would show. At the end of each test that has a database, the values that must not
appear are gathered -- every memory's content and context (live and in history) from that
database, and every query, message text and context the app received (:class:`Witness`, an
ASGI observer on the test app) -- and searched for in the captured text and in every audit
row. Key material is searched for by shape: a full key (``sk_<prefix>_<secret>``) wherever
it appears, the public prefix alone being fine. A hit fails the test that produced it,
naming the record.

The one allowed print of a key (the owner key ``strata dev`` shows once) goes to stdout,
not to a logger, and is not captured here.
"""

from __future__ import annotations

import json
import logging
import re
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field

KEY_MATERIAL = re.compile(r"sk_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")
MIN_VALUE = 16  # shorter strings ("coffee", a path) would match innocent text
_STANDARD = set(vars(logging.LogRecord("x", 0, "x", 0, "", None, None))) | {"message", "asctime"}
# Body fields whose strings are user text: what was written (a memory's content and its
# context), said or asked.
_TEXT_FIELDS = {"content", "context", "text", "query", "q"}


def record_text(record: logging.LogRecord) -> str:
    try:
        parts = [record.getMessage()]
    except Exception:  # a record whose args do not fit its format: keep both raw
        parts = [str(record.msg), repr(record.args)]
    extras = {k: v for k, v in vars(record).items() if k not in _STANDARD}
    if extras:
        parts.append(json.dumps(extras, default=repr))
    if record.exc_info and record.exc_info[1] is not None:
        parts.append("".join(traceback.format_exception(*record.exc_info)))
    if record.stack_info:
        parts.append(record.stack_info)
    return "\n".join(parts)


@dataclass
class Scan:
    texts: list[tuple[str, str]] = field(default_factory=list)  # (logger, text) this test
    witnessed: set[str] = field(default_factory=set)  # user text the app received this test
    records: int = 0
    values: int = 0
    audit_rows: int = 0
    tests: int = 0
    hits: list[str] = field(default_factory=list)
    capturing: bool = False

    def capture(self, record: logging.LogRecord) -> None:
        if self.capturing:
            self.records += 1
            self.texts.append((record.name, record_text(record)))

    def start(self) -> None:
        self.texts, self.witnessed, self.capturing = [], set(), True

    def check(self, test: str, values: Iterable[str], audit: list[str]) -> list[str]:
        """The hits of this test (also kept for the run's summary)."""
        self.capturing = False
        wanted = {v for v in values if isinstance(v, str) and len(v) >= MIN_VALUE} | {
            v for v in self.witnessed if len(v) >= MIN_VALUE}
        self.tests += 1
        self.values += len(wanted)
        self.audit_rows += len(audit)
        found = find(wanted, [(f"log {name}", text) for name, text in self.texts]
                     + [("audit row", row) for row in audit])
        self.hits += [f"{test}: {hit}" for hit in found]
        return found


def find(values: set[str], texts: list[tuple[str, str]]) -> list[str]:
    hits = []
    for where, text in texts:
        for match in KEY_MATERIAL.finditer(text):
            hits.append(f"key material in {where}: {match.group()[:15]}...")
        for value in values:
            if value in text:
                hits.append(f"user text in {where}: {value[:24]!r}...")
    return hits


SCAN = Scan()
_handle = logging.Logger.handle


def _observed_handle(self: logging.Logger, record: logging.LogRecord) -> None:
    SCAN.capture(record)
    _handle(self, record)


def install() -> None:
    """Observe every record from now on (idempotent)."""
    logging.Logger.handle = _observed_handle  # type: ignore[method-assign]


def strings_in(value, fields=_TEXT_FIELDS, *, under: bool = False) -> Iterable[str]:
    """Strings held by the text fields of a JSON document, at any depth."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from strings_in(v, fields, under=k in fields)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v, fields, under=under)
    elif isinstance(value, str) and under:
        yield value


class Witness:
    """ASGI observer: remembers the user text of each request (the text fields of its JSON
    body and query string), so the scan knows what must not show up in logs. It changes
    nothing."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from urllib.parse import parse_qsl

        for name, value in parse_qsl(scope.get("query_string", b"").decode("latin-1")):
            if name in _TEXT_FIELDS:  # not ids (a principal's id is in its audit rows, rightly)
                SCAN.witnessed.add(value)
        chunks: list[bytes] = []

        async def observed_receive():
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        SCAN.witnessed.update(strings_in(json.loads(b"".join(chunks))))
                    except (ValueError, RecursionError):
                        pass
            return message

        await self.app(scope, observed_receive, send)


def stored_values(db) -> tuple[list[str], list[str]]:
    """(every memory content and context the database holds or held, every audit row as
    text)."""
    with db.connection() as conn:
        contents = [r["c"] for r in conn.execute(
            "SELECT content AS c FROM memories UNION SELECT context FROM memories"
            " UNION SELECT row_data->>'content' FROM memory_history"
            " UNION SELECT row_data->>'context' FROM memory_history"
        ).fetchall() if r["c"]]
        audit = [r["t"] for r in conn.execute("SELECT a::text AS t FROM audit_log a").fetchall()]
    return contents, audit


# ---------------------------------------------------------------------- the pytest plugin
import pytest  # noqa: E402 -- the plugin part, below the scanner it drives

install()


@pytest.fixture(autouse=True)
def _log_and_audit_scan(request):
    """Scan what this test logged and audited (see the module's docstring). The test's
    database is requested first, so it is still there when this fixture's teardown reads it."""
    db = None
    if "db" in request.fixturenames:
        db = request.getfixturevalue("db")
    elif "module_db" in request.fixturenames:
        db = request.getfixturevalue("module_db")[0]
    # What production logs (STRATA_LOG_LEVEL defaults to INFO), not only warnings.
    strata_logger = logging.getLogger("strata")
    level = strata_logger.level
    strata_logger.setLevel(logging.INFO)
    SCAN.start()
    yield
    strata_logger.setLevel(level)
    contents, audit = stored_values(db) if db is not None else ([], [])
    hits = SCAN.check(request.node.nodeid, contents, audit)
    if hits:
        pytest.fail("the log and audit scan found user text or key material:\n  "
                    + "\n  ".join(hits[:20]), pytrace=False)


_TOTALS = ("tests", "records", "audit_rows", "values")


def pytest_sessionfinish(session) -> None:
    """Under pytest-xdist each worker scans its own tests: it hands its totals (and hits) to
    the controller, which prints the one summary line."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["log_scan"] = {**{name: getattr(SCAN, name) for name in _TOTALS},
                              "hits": list(SCAN.hits)}


@pytest.hookimpl(optionalhook=True)  # an xdist hook: absent when the run is not distributed
def pytest_testnodedown(node, error) -> None:
    totals = getattr(node, "workeroutput", {}).get("log_scan")
    if totals:
        for name in _TOTALS:
            setattr(SCAN, name, getattr(SCAN, name) + totals[name])
        SCAN.hits += totals["hits"]


def pytest_terminal_summary(terminalreporter) -> None:
    if SCAN.tests:
        terminalreporter.write_line(
            f"log and audit scan: {SCAN.tests} tests, {SCAN.records} log records, "
            f"{SCAN.audit_rows} audit rows, {SCAN.values} user values searched, "
            f"{len(SCAN.hits)} hits")
