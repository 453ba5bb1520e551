"""The log and audit scan can fail: its controls (tests/log_scan.py runs it around every test)."""

from __future__ import annotations

import logging

import log_scan
from log_scan import Scan, find, record_text, strings_in


def _record(msg, *args, exc=None, **extra) -> logging.LogRecord:
    record = logging.LogRecord("strata.x", logging.ERROR, __file__, 1, msg, args, exc)
    for k, v in extra.items():
        setattr(record, k, v)
    return record


def test_the_scan_finds_content_in_messages_extras_and_tracebacks_and_key_material():
    content = "My sister Alice is allergic to peanuts"
    key = "sk_0123456789ab_" + "Z" * 43
    try:
        raise ValueError(f'duplicate key value violates unique constraint: ({content})')
    except ValueError as exc:
        traced = _record("write failed", exc=(type(exc), exc, exc.__traceback__))
    texts = [("a", record_text(_record("stored %s", content))),
             ("b", record_text(_record("ok", detail=content))),
             ("c", record_text(traced)),
             ("d", record_text(_record("auth with %s", key))),
             ("control", record_text(_record("memory.create ok", tenant_id="t", count=3)))]
    hits = find({content}, texts)
    assert [h.split(":")[0] for h in hits] == [
        "user text in a", "user text in b", "user text in c", "key material in d"]
    assert not find({content}, [texts[-1]])  # control: an ids-only line is clean
    assert not find(set(), [("prefix", "key sk_0123456789ab listed")])  # the public prefix is fine


def test_the_scan_fails_a_test_that_logs_what_the_app_received():
    """A Scan run as the plugin runs it: what the witness saw in a request body, logged by
    the code under test, is a hit; the same run without the log line (control) is clean."""
    for logged, expected in ((True, 1), (False, 0)):
        scan = Scan()
        scan.start()
        scan.witnessed |= set(strings_in({"memories": [{"content": "The deploy region is eu-west-1"}],
                                          "query": "where do we deploy these days"}))
        assert len(scan.witnessed) == 2
        if logged:
            scan.capture(_record("query %s", "where do we deploy these days"))
        scan.capture(_record("search done", count=2))
        assert len(scan.check("t", [], ["(1,read,http,memory.search)"])) == expected


def test_the_plugin_observes_every_logger_whatever_its_handlers():
    """install() observes records before handlers and propagation: a logger that does not
    propagate and has no handler is still seen (the hierarchy Powertools reconfigures)."""
    quiet = logging.getLogger("strata.test.quiet")
    quiet.propagate, quiet.handlers = False, []
    before = log_scan.SCAN.records
    quiet.warning("something happened")
    assert log_scan.SCAN.records == before + 1
    quiet.propagate = True
