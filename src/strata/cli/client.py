"""Client-side ``strata`` commands.

``remember``, ``recall``, ``memories`` and ``review`` talk to a running strata over HTTP
through :mod:`strata.client` (``STRATA_URL`` / ``STRATA_KEY`` or a profile, see
:mod:`strata.client.config`; ``--url`` and ``--profile`` override). They print a readable
table, or the API's JSON with ``--json``. Exit status: 0 done, 1 the server refused or could
not be reached, 2 bad input or configuration. ``remember`` that keeps nothing is done (0):
extraction judged, and says why; a script reads the answer's ``not_kept`` (``--json``, the
``Remembered`` that ``Client.remember`` and MCP ``remember`` answer too). No
key is taken on the command line (it would land in shell history and ``ps``).

``export`` and ``import`` are operator commands on the database, like ``strata reindex``
(see :mod:`strata.maintenance.transfer` for why): ``--tenant`` names the tenant.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

from strata.cli.support import (
    EXIT_REFUSED, EXIT_USAGE, JSON_HELP, fail, find_tenant, open_database, print_json, table,
    table_lines, when,
)


def _cursor(value: str) -> str:
    if not (value.isascii() and value.isdigit()):
        raise argparse.ArgumentTypeError(f"{value!r} is not a cursor (the number printed last)")
    return value


def _event_types(known: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(value: str) -> list[str]:
        named = [v.strip() for v in value.split(",") if v.strip()]
        unknown = [v for v in named if v not in known]
        if not named or unknown:
            raise argparse.ArgumentTypeError(
                f"unknown type {', '.join(unknown) or value!r}; one of: {', '.join(known)}")
        return named

    return parse


# --------------------------------------------------------------------------------------
# Argument types
# --------------------------------------------------------------------------------------


def _memory_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a memory id (a UUID)") from None


def _instant(value: str) -> datetime:
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an ISO date or time (e.g. 2026-05-01 or 2026-05-01T09:00Z)") from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _fraction(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return x


def _limit(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


# --------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------


def _print_json(value: Any) -> None:
    print_json(value)


def _error(args: argparse.Namespace, exc: Exception) -> int:
    from strata.client import errors

    if not isinstance(exc, errors.ApiError):
        exc = errors.ApiError(str(exc))
    code = EXIT_USAGE if isinstance(exc, (errors.ConfigError, errors.InvalidInput)) else EXIT_REFUSED
    hint = {
        "unreachable": "is the server running (`strata dev`)? Set STRATA_URL or --url.",
        "unauthenticated": "check STRATA_KEY or the profile's key.",
        "forbidden": "this key has no access to that path.",
    }.get(exc.code)
    if exc.field == "version" and getattr(args, "id", None) is not None:
        hint = (f"its versions: strata memories history {args.id}; then strata memories "
                f"restore {args.id} --version N")
    return fail(args, exc.message, code=exc.code, field=exc.field, status=code, hint=hint,
                details=exc.details)


def _client(args: argparse.Namespace):
    import logging

    from strata.client import Client, ConfigError
    from strata.client.config import profiles_path

    # httpx logs every request at INFO: noise on a terminal (the client logs its retries).
    logging.getLogger("httpx").setLevel(logging.WARNING)
    client = Client(url=args.url, profile=args.profile)
    if not client.config.key:
        client.close()
        raise ConfigError(
            "no API key: set STRATA_KEY (`strata dev` prints the line to paste) or give a "
            f"profile a key or key_file in {profiles_path()}")
    return client


def _over_http(fn: Callable[[Any, argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run ``fn(client, args)``; every client error becomes a message and an exit status."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        from strata.client import ApiError

        try:
            with _client(args) as client:
                return fn(client, args)
        except ApiError as exc:
            return _error(args, exc)

    return run


# --------------------------------------------------------------------------------------
# remember / recall
# --------------------------------------------------------------------------------------


def _read_messages(source: str) -> list[Any]:
    from strata.client import ConfigError, InvalidInput

    try:
        text = sys.stdin.read() if source == "-" else open(source, encoding="utf-8").read()
    except OSError as exc:
        raise ConfigError(f"cannot read {source}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError:
        # JSON Lines: one message per line
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            raise InvalidInput(f"{source}: not JSON (a list of {{role, content}} messages, "
                               "or one message per line)", field="messages") from None
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list):
        raise InvalidInput(f"{source}: expected a list of messages", field="messages")
    return data


def _statement(args: argparse.Namespace) -> str:
    return sys.stdin.read() if args.text == "-" else args.text


@_over_http
def cmd_remember(client, args: argparse.Namespace) -> int:
    """Extract and wait (default), ``--no-wait``, or ``--as-is``: each answers the
    ``Remembered`` that ``Client.remember`` and MCP ``remember`` answer (``--json`` prints it)."""
    from strata.client import InvalidInput
    from strata.ingest.remember import FAILED, STORED

    if args.messages and args.text:
        raise InvalidInput("give a statement or --messages, not both", field="messages")
    if args.as_is:
        if args.messages:
            raise InvalidInput("--as-is stores one statement: give TEXT, not --messages",
                               field="messages")
        if not args.text:
            raise InvalidInput("give the statement to store as written", field="text")
        for flag, given in (("--role", args.role != "user"), ("--no-wait", args.no_wait),
                            ("--idempotency-key", args.idempotency_key)):
            if given:
                raise InvalidInput(f"{flag} applies only to extraction, not with --as-is",
                                   field=flag.lstrip("-").replace("-", "_"))
        answer = client.remember(_statement(args), args.path, as_is=True, kind=args.kind,
                                 context=args.context)
        # blocked (a forgotten or rejected value, or a rule): it may not come back
        code = 0 if answer.items and answer.items[0].outcome in STORED else EXIT_REFUSED
    else:
        if args.kind:
            raise InvalidInput("--kind applies only with --as-is (extraction decides the kind)",
                               field="kind")
        if args.context:
            raise InvalidInput("--context applies only with --as-is (extraction keeps none)",
                               field="context")
        if args.messages:
            said: Any = _read_messages(args.messages)
        elif args.text:
            said = _statement(args)
        else:
            raise InvalidInput("give a statement to remember, or --messages FILE", field="text")
        answer = client.remember(said, args.path, role=args.role, wait=not args.no_wait,
                                 idempotency_key=args.idempotency_key)
        code = EXIT_REFUSED if answer.status in FAILED else 0
    if args.json:
        _print_json(answer)
    elif args.as_is:
        _print_as_is(answer)
    else:
        _print_remembered(answer, one_statement=not args.messages)
    return code


def _print_as_is(answer) -> None:
    [item] = answer.items
    if item.outcome not in ("created", "reinforced", "superseded_existing", "candidate"):
        tombstone = f" (tombstone {item.tombstone_id})" if item.tombstone_id else ""
        print(f"strata: nothing stored: {item.reason or item.outcome}{tombstone} "
              f"[{item.outcome}]", file=sys.stderr)
        return
    where = f" in {answer.path}" if answer.path else ""
    print({"created": f"stored as written{where}",
           "reinforced": f"already held{where}: reinforced, now version {item.version}",
           "superseded_existing": f"stored as written{where}, superseding what held its slot",
           "candidate": f"held for review{where}: {item.reason}",
           }[item.outcome])
    _kept_table(answer.items)


def _kept_table(items) -> None:
    rows = [(i.outcome, i.memory_id or "", i.content or "", i.reason or "") for i in items]
    if any(i.reason for i in items):
        table(["outcome", "memory", "content", "reason"], rows, flex=2)
    else:
        table(["outcome", "memory", "content"], [r[:3] for r in rows], flex=2)


def _not_kept_text(n) -> str:
    if n.reason == "secret" or n.text is None:
        return "[withheld]" if n.reason == "secret" else f"[message {n.message}]"
    return n.text


def _print_remembered(answer, *, one_statement: bool) -> None:
    """What was kept (outcome, id, content), what was not and why, and when nothing was
    stored, a line that says so first and how to store a statement anyway."""
    from collections import Counter

    from strata.ingest.remember import FAILED, PENDING, SHOW_CONTENT, STORED

    stored = [i for i in answer.items if i.outcome in STORED]
    pending = answer.status in PENDING
    if stored or pending:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(Counter(
            i.outcome for i in answer.items).items()))
        print(f"receipt {answer.receipt_id}: {answer.status} ({counts or 'nothing yet'}) "
              f"in {answer.path}")
    else:
        print(f"nothing stored in {answer.path} (receipt {answer.receipt_id}: {answer.status})")
    if answer.items:
        _kept_table(answer.items)
        if len({i.memory_id for i in answer.items if i.memory_id}) > SHOW_CONTENT:
            print(f"(content of the first {SHOW_CONTENT} memories; the rest: "
                  "strata memories show ID)")
    for n in answer.not_kept:
        print(f"not kept ({n.reason}): {_not_kept_text(n)}")
    if pending:
        print(f"strata: still {answer.status}; see it with the receipt id "
              f"(GET /v1/ingest/{answer.receipt_id})")
    elif answer.status in FAILED:
        print(f"strata: the pipeline failed ({answer.status}): {answer.error or 'no detail'}",
              file=sys.stderr)
    elif not stored:
        reasons = {n.reason for n in answer.not_kept}
        if "secret" in reasons:
            print("a secret is never stored, not even with --as-is")
        if not reasons and not answer.items:
            print("extraction found nothing in it to keep")
        # --as-is is no way round a secret in the statement, nor a blocked (forgotten) value.
        if (reasons - {"secret"} or not (reasons or answer.items)) and not (
                one_statement and "secret" in reasons):
            print("to store it exactly as written, run the same command with --as-is"
                  if one_statement else
                  "to store a statement exactly as written: strata remember --as-is TEXT")


def _explain_line(explain: dict[str, Any] | None) -> str:
    if not explain:
        return ""
    if "expanded" in explain:
        e = explain["expanded"]
        return f"expanded from {e.get('from')} by {e.get('edge')}"
    parts = []
    for arm in ("vector", "text"):
        a = explain.get(arm) or {}
        if a.get("rank") is not None:
            parts.append(f"{arm} #{a['rank']} ({float(a['score']):.3f})")
        else:
            parts.append(f"{arm} -")
    fusion = explain.get("fusion") or {}
    if fusion.get("vector_weight") is not None:
        parts.append(f"weights vector {fusion['vector_weight']:.2f}"
                     f" / text {1 - fusion['vector_weight']:.2f}")
    tw = (explain.get("boosts") or {}).get("time_window")
    if tw and tw.get("value"):
        texts = ", ".join(w["text"] for w in tw.get("windows", []))
        parts.append(f"time +{tw['value']:.4f} ({tw.get('match')}: {texts})")
    if explain.get("rank_score") is not None:
        parts.append(f"ranked by {explain['rank_score']:.4f}")
    rel = explain.get("relevance") or {}
    if rel.get("contributions"):
        # the score shown, as it was made (strata.search.ranking, "Relevance")
        terms = " ".join(f"{c:+.2f} {name}" for name, c in rel["contributions"].items())
        parts.append(f"score = σ({rel['intercept']:+.2f} {terms} = {rel['logit']:+.2f})"
                     f" = {explain.get('score', 0):.4f}")
    else:
        parts.append(f"= {explain.get('score', 0):.4f}")
    return " · ".join(parts)


@_over_http
def cmd_recall(client, args: argparse.Namespace) -> int:
    results = client.search(
        args.query, paths=args.path, kinds=args.kind, tags=args.tag, limit=args.limit,
        valid_at=args.valid_at, include=args.include, mode=args.mode,
        expand=args.expand or None, explain=args.explain or None, min_score=args.min_score)
    if args.json:
        # the answer of POST /v1/search as it came, not a shape of the CLI's own
        from strata.search.models import SearchResponse

        _print_json(SearchResponse(results=results))
        return 0
    if not results:
        print("no memories match")
        return 0
    rows = [(n, f"{r.score:.4f}" if not r.expanded else "+", r.kind, r.path, r.content, r.id)
            for n, r in enumerate(results, 1)]
    lines = table_lines(["#", "score", "kind", "path", "content", "id"], rows, flex=4)
    print(lines[0])
    for line, r in zip(lines[1:], results, strict=True):
        print(line)
        if args.explain:
            print(f"   {_explain_line(r.explain)}")
    return 0


# --------------------------------------------------------------------------------------
# memories
# --------------------------------------------------------------------------------------


def _show(m) -> None:
    valid = f"{when(m.valid_from)} → {when(m.valid_to) or 'now'}"
    fields = [
        ("id", m.id), ("path", m.path), ("name", m.name), ("status", m.status),
        ("kind", m.kind), ("content", m.content),
        ("slot", f"{m.slot} = {m.value}" if m.slot else None), ("valid", valid),
        ("version", m.version), ("importance", f"{m.importance:.2f}"),
        ("confidence", f"{m.confidence:.2f}"), ("pinned", "yes" if m.pinned else None),
        ("tier", m.tier), ("tags", ", ".join(m.tags) or None), ("origin", m.origin),
        ("reinforced", m.reinforcements or None), ("used", m.access_count or None),
        ("recorded", when(m.recorded_at)), ("updated", when(m.updated_at)),
    ]
    for k, v in fields:
        if v is not None and v != "":
            print(f"{k:<11} {v}")


@_over_http
def cmd_memories_show(client, args: argparse.Namespace) -> int:
    m = client.memories.get(args.id)
    _print_json(m) if args.json else _show(m)
    return 0


@_over_http
def cmd_memories_list(client, args: argparse.Namespace) -> int:
    page = client.memories.list(path=args.path, kind=args.kind, status=args.status,
                                tags=args.tag, cursor=args.cursor, limit=args.limit)
    if args.json:
        _print_json(page)
        return 0
    if not page.items:
        print("no memories")
        return 0
    table(["id", "status", "kind", "path", "content"],
          [(m.id, m.status, m.kind, m.path, m.content) for m in page.items], flex=4)
    if page.next_cursor:
        print(f"more: --cursor {page.next_cursor}")
    return 0


@_over_http
def cmd_memories_history(client, args: argparse.Namespace) -> int:
    entries = client.memories.history(args.id)
    if args.json:
        _print_json(entries)
        return 0
    if not entries:
        print("no history: the memory has not changed since it was written")
        return 0
    table(["version", "operation", "changed", "cause", "status", "content"],
          [(e.version, e.operation, when(e.changed_at), e.cause or "",
            e.snapshot.get("status", ""),
            "(erased)" if e.erased else e.snapshot.get("content", "")) for e in entries], flex=5)
    return 0


def _confirm(question: str) -> bool:
    print(question + " [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


@_over_http
def cmd_memories_forget(client, args: argparse.Namespace) -> int:
    from strata.client import InvalidInput

    if not args.yes:
        if not sys.stdin.isatty():
            raise InvalidInput("forget erases the memory for good: pass --yes to confirm",
                               field="yes")
        if not _confirm(f"Erase memory {args.id} and every earlier version of it, for good?"):
            print("strata: nothing forgotten", file=sys.stderr)
            return EXIT_REFUSED
    out = client.memories.forget(args.id)
    if args.json:
        _print_json(out)
    else:
        print(f"forgotten {out.id}: erased, and its values tombstoned "
              f"({len(out.tombstone_ids)} tombstone{'s' if len(out.tombstone_ids) != 1 else ''})")
        for other in out.also_forgotten:
            print(f"forgotten {other} too: it held the same value")
    return 0


@_over_http
def cmd_memories_restore(client, args: argparse.Namespace) -> int:
    m = client.memories.restore(args.id, args.version)
    if args.json:
        _print_json(m)
    else:
        print(f"restored {m.id}: now version {m.version} ({m.status})")
    return 0


# --------------------------------------------------------------------------------------
# review
# --------------------------------------------------------------------------------------


@_over_http
def cmd_events_tail(client, args: argparse.Namespace) -> int:
    """Print the events after ``--after``, one a line, then the cursor to resume from; with
    ``--follow``, keep polling until interrupted."""
    after = args.after
    while True:
        page = client.events(after=after, path=args.path, types=args.types, limit=args.limit)
        for e in page.items:
            if args.json:
                print(e.model_dump_json())
            else:
                related = f" by {', '.join(map(str, e.related))}" if e.related else ""
                print(f"{e.cursor}  {e.at.isoformat(timespec='seconds')}  {e.type:<15} "
                      f"{e.memory_id} v{e.version}  {e.path}{related}  "
                      f"({e.cause or '-'}, {e.actor or '-'})", flush=True)
        after = page.next_cursor
        if len(page.items) == args.limit:
            continue  # more committed already: no wait
        if not args.follow:
            break
        try:
            time.sleep(args.interval)
        except KeyboardInterrupt:
            break
    if not args.json:
        print(f"resume: --after {after}", file=sys.stderr)
    return 0


@_over_http
def cmd_review_list(client, args: argparse.Namespace) -> int:
    page = client.review.list(path=args.path, cursor=args.cursor, limit=args.limit)
    if args.json:
        _print_json(page)
        return 0
    if not page.items:
        print("nothing to review")
        return 0
    table(["id", "kind", "path", "contradicts", "content"],
          [(m.id, m.kind, m.path, ", ".join(str(c.get("target_id")) for c in m.contradicts),
            m.content) for m in page.items], flex=4)
    if page.next_cursor:
        print(f"more: --cursor {page.next_cursor}")
    return 0


def _decided(args: argparse.Namespace, m, verb: str) -> int:
    if args.json:
        _print_json(m)
    else:
        print(f"{verb} {args.id}: {m.id} is {m.status} (version {m.version})")
    return 0


@_over_http
def cmd_review_promote(client, args: argparse.Namespace) -> int:
    return _decided(args, client.review.promote(args.id), "promoted")


@_over_http
def cmd_review_reject(client, args: argparse.Namespace) -> int:
    return _decided(args, client.review.reject(args.id, suppress=args.suppress,
                                               until=args.until), "rejected")


@_over_http
def cmd_review_merge(client, args: argparse.Namespace) -> int:
    return _decided(args, client.review.merge(args.id, args.into), "merged")


# --------------------------------------------------------------------------------------
# rules
# --------------------------------------------------------------------------------------


def _rule_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a rule id (a UUID)") from None


def _rule_line(r) -> str:
    parts = [f"capture {r.capture}"]
    if r.exclude_categories:
        parts.append("excludes " + ", ".join(r.exclude_categories))
    if r.exclude_patterns:
        parts.append(f"{len(r.exclude_patterns)} exclude pattern(s)")
    if r.include_categories:
        parts.append("includes " + ", ".join(r.include_categories))
    if r.instructions:
        parts.append("instructions for the model")
    if r.retention_days:
        parts.append(f"retention {r.retention_days} days")
    return "; ".join(parts)


@_over_http
def cmd_rules_set(client, args: argparse.Namespace) -> int:
    fields = {"capture": args.capture, "exclude_categories": args.exclude or [],
              "exclude_patterns": args.exclude_pattern or [],
              "include_categories": args.include or [], "instructions": args.instructions,
              "retention_days": args.retention_days, "expected_version": args.expected_version}
    rule = client.rules.set(args.path, **{k: v for k, v in fields.items() if v is not None})
    if args.json:
        _print_json(rule)
    else:
        print(f"rule {rule.id} at {rule.path or '(root)'}, version {rule.version}: "
              f"{_rule_line(rule)}")
    return 0


@_over_http
def cmd_rules_list(client, args: argparse.Namespace) -> int:
    rules = client.rules.list(path=args.path)
    if args.json:
        _print_json(rules)
        return 0
    if not rules:
        print("no rules")
        return 0
    table(["id", "path", "version", "rule"],
          [(r.id, r.path or "(root)", r.version, _rule_line(r)) for r in rules], flex=3)
    return 0


@_over_http
def cmd_rules_delete(client, args: argparse.Namespace) -> int:
    gone = client.rules.delete(args.id)
    if args.json:
        _print_json(gone)
    else:
        print(f"deleted rule {gone.id} (version {gone.version}); its history stays")
    return 0


# --------------------------------------------------------------------------------------
# export / import (operator commands, on the database)
# --------------------------------------------------------------------------------------


def _operator_error(args: argparse.Namespace, exc: Exception | str, code: str = "invalid_input",
                    field: str | None = None) -> int:
    return fail(args, str(exc), code=code, field=field)


def _progress_bar(total: int | None, desc: str):
    """A bar on a terminal (stderr), nothing when piped."""
    from strata.cli.progress import bar

    return bar(desc, total, unit="rec")


def cmd_export(args: argparse.Namespace) -> int:
    from strata.maintenance.transfer import export

    db = open_database()
    tenant = find_tenant(db, args.tenant)
    output = args.output
    if output is None and sys.stdout.isatty():
        output = str(_export_file(tenant.name))
    try:
        out = sys.stdout if output in (None, "-") else _open_export(output, default=args.output is None)
    except OSError as exc:
        return _operator_error(args, f"cannot write {output}: {exc.strerror}", field="output")
    try:
        with _progress_bar(None, "export") as bar:
            counts = export(db, tenant.id, out, progress=bar.update)
    finally:
        if out is not sys.stdout:
            out.close()
    if out is not sys.stdout:
        # The absolute path: a relative one names a place only from the shell it was typed in.
        print(json.dumps({"tenant": tenant.name, "file": str(Path(output).resolve()),
                          "counts": counts}, indent=2))
    return 0


def _export_file(tenant: str) -> Path:
    """Where an export goes when no file is named and stdout is a terminal (which would only
    scroll a tenant's memories past): a new file under the home's exports/, named for the
    tenant and the time, never the working directory (often a checkout, where it would wait
    to be committed)."""
    from strata.foundation.config import get_settings

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in tenant)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return get_settings().home.resolve() / "exports" / f"{safe}-{stamp}.jsonl"


def _open_export(output: str, *, default: bool):
    """The file named, as asked; the default one new (never overwritten) and readable by its
    owner only, as the memories it holds are."""
    if not default:
        return open(output, "w", encoding="utf-8")
    Path(output).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    return open(fd, "w", encoding="utf-8")


def cmd_import(args: argparse.Namespace) -> int:
    from strata.cli.support import store_embedder, warn_embedder_mismatch
    from strata.providers.store_embedder import EmbedderMismatch

    try:
        source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    except OSError as exc:
        return _operator_error(args, f"cannot read {args.file}: {exc.strerror}", field="file")
    try:
        db = open_database(check_embedder=False)
        try:  # what the import embeds with is the store's embedder, as the server's is
            chosen = store_embedder(db)
        except (ValueError, EmbedderMismatch) as exc:
            return _operator_error(args, exc)
        warn_embedder_mismatch(db, chosen.embedder)
        return _import(args, db, chosen.settings, chosen.embedder, source)
    finally:
        if source is not sys.stdin:
            source.close()


def _import(args: argparse.Namespace, db, settings, embedder, source) -> int:
    import itertools

    from strata.db.migrate import check_schema
    from strata.maintenance.transfer import Importer

    with db.connection() as conn:
        try:
            check_schema(conn, settings)
        except RuntimeError as exc:
            return _operator_error(args, exc, "schema")
    tenant, created = _destination(db, args)
    if tenant is None:
        return fail(args, f"tenant {args.tenant!r} not found", code="not_found", field="tenant",
                    hint="pass --create-tenant to create it (the report then holds its owner "
                    "key, shown once)")
    job = None
    try:
        first = source.readline()
        try:
            counts = json.loads(first).get("counts", {}) if first.strip() else {}
            total = sum(v for v in counts.values() if isinstance(v, int)) or None
        except (ValueError, AttributeError):
            total = None  # the importer says what is wrong with it
        with _progress_bar(total, "import") as bar:
            job = Importer(db, tenant.id, embedder, settings=settings, keep_ids=args.keep_ids,
                           batch=args.batch, progress=bar.update)
            report = job.run(itertools.chain([first], source)).to_json()
    except BaseException as exc:
        if created is not None and not _wrote_anything(job):
            # A tenant made for this import and left empty by its failure: not left behind.
            from strata.auth import delete_tenant

            delete_tenant(db, tenant.id, cause="import.failed", actor="cli")
        if isinstance(exc, UnicodeDecodeError):
            return _operator_error(args, f"{args.file} is not UTF-8 text", field="file")
        raise
    report["tenant"] = tenant.name
    if created is not None:
        report["tenant_created"] = created
    print(json.dumps(report, indent=2, default=str))
    if not report["complete"]:
        print("strata import: the file ended before its end record (cut short?): what it held "
              "is imported; import the whole file again to finish", file=sys.stderr)
        return EXIT_REFUSED
    return 0


def _destination(db, args: argparse.Namespace) -> tuple[Any, dict[str, Any] | None]:
    """The tenant to import into, and, when --create-tenant made it now, what to report of
    it (with its owner key: shown once). (None, None) when it does not exist and may not be
    created."""
    from strata.auth import create_tenant
    from strata.foundation.errors import InvalidInput, NotFound

    try:
        return find_tenant(db, args.tenant), None
    except NotFound:
        if not args.create_tenant:
            return None, None
    try:
        tenant, key = create_tenant(db, args.tenant)
    except InvalidInput as exc:  # the name, which the user gave as --tenant
        raise InvalidInput(exc.message, field="tenant") from None
    return tenant, {"tenant_id": str(tenant.id), "name": tenant.name, "key": key.key}


def _wrote_anything(job) -> bool:
    if job is None:
        return False
    report = job.report
    return any(part.get("inserted") for part in (
        report.memories, report.history, report.relationships, report.tombstones))


# --------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the client-side commands to the ``strata`` parser."""
    from strata.foundation.fields import Kind

    conn = argparse.ArgumentParser(add_help=False)
    g = conn.add_argument_group("connection")
    g.add_argument("--url", help="the strata API (default STRATA_URL, a profile, or "
                   "http://127.0.0.1:8080)")
    g.add_argument("--profile", help="a profile of ~/.config/strata/profiles.toml "
                   "(default STRATA_PROFILE, else [default])")
    out = argparse.ArgumentParser(add_help=False)
    out.add_argument("--json", action="store_true", help=JSON_HELP + "; the API's JSON")

    def command(parent, name: str, func, help_: str, *, http: bool = True):
        p = parent.add_parser(name, help=help_, description=help_,
                              parents=[conn, out] if http else [])
        p.set_defaults(func=func)
        return p

    p = command(sub, "remember", cmd_remember,
                "remember a statement (or a conversation) in a path: extracts what is worth "
                "keeping, waits, and prints what was kept (with its content) and what was "
                "not, and why; --json is the answer MCP remember and Client.remember give")
    p.epilog = ("Exit status: 0 the request was carried out, also when nothing was worth "
                "storing (the first line then says 'nothing stored', and --json has the "
                "answer's not_kept); 1 the server refused (with --as-is: a forgotten or "
                "rejected value, blocked), the pipeline failed, or no server answered; 2 bad "
                "input (with --as-is: a secret) or configuration.")
    p.add_argument("text", nargs="?", help="what to remember ('-' reads stdin)")
    p.add_argument("--as-is", action="store_true",
                   help="store TEXT verbatim as one memory, through the write gate (no "
                   "extraction): a repeat reinforces what is held, a secret is refused")
    p.add_argument("--kind", choices=get_args(Kind), metavar="KIND",
                   help=f"with --as-is: what sort of memory it is ({', '.join(get_args(Kind))}; "
                   "default fact)")
    p.add_argument("--context", metavar="TEXT",
                   help="with --as-is: what situates it, e.g. the question it answers; recall "
                   "finds it by these words too, but they are not part of the statement")
    p.add_argument("--path", help="where it lives, e.g. users.alice (default: the key's)")
    p.add_argument("--messages", metavar="FILE",
                   help="a JSON list of {role, content, at?} messages ('-' reads stdin)")
    p.add_argument("--role", default="user", choices=("user", "assistant", "system", "tool"),
                   help="the statement's role (default user)")
    p.add_argument("--no-wait", action="store_true",
                   help="do not wait for extraction: answer at once with status queued and "
                   "the receipt id")
    p.add_argument("--idempotency-key", help="replaying the same key writes nothing twice")

    p = command(sub, "recall", cmd_recall, "search what is true now (hybrid retrieval)")
    p.add_argument("query")
    p.add_argument("--path", action="append", help="only under this path (repeatable)")
    p.add_argument("--kind", action="append", help="only this kind (repeatable)")
    p.add_argument("--tag", action="append", help="only memories with this tag (repeatable)")
    p.add_argument("--limit", type=_limit, default=10)
    p.add_argument("--valid-at", type=_instant, help="what was true at this time")
    p.add_argument("--include", action="append", choices=("candidates", "history"),
                   help="also candidates, or superseded/archived memories")
    p.add_argument("--mode", choices=("hybrid", "vector", "keyword"))
    p.add_argument("--expand", action="store_true", help="add linked memories (graph expansion)")
    p.add_argument("--explain", action="store_true", help="show each score's breakdown")
    p.add_argument("--min-score", type=_fraction, metavar="X",
                   help="only results scoring at least X (0..1: the probability that a result "
                   "is relevant; 0.5 keeps most relevant results and drops most others)")

    memories = sub.add_parser("memories", help="look at and manage single memories") \
        .add_subparsers(dest="action", required=True)
    p = command(memories, "show", cmd_memories_show, "one memory, every field")
    p.add_argument("id", type=_memory_id)
    p = command(memories, "list", cmd_memories_list, "a page of memories")
    p.add_argument("--path")
    p.add_argument("--status", action="append",
                   help="active (default), candidate, superseded, archived, rejected, or all")
    p.add_argument("--kind", action="append")
    p.add_argument("--tag", action="append")
    p.add_argument("--limit", type=_limit, default=50)
    p.add_argument("--cursor")
    p = command(memories, "history", cmd_memories_history, "a memory's earlier versions")
    p.add_argument("id", type=_memory_id)
    p = command(memories, "forget", cmd_memories_forget,
                "erase a memory and its history for good; its values cannot come back")
    p.add_argument("id", type=_memory_id)
    p.add_argument("--yes", action="store_true", help="do not ask (required when not on a terminal)")
    p = command(memories, "restore", cmd_memories_restore,
                "bring a deleted memory back, or roll one back to --version")
    p.add_argument("id", type=_memory_id)
    p.add_argument("--version", type=_limit)

    review = sub.add_parser("review", help="candidates held back for a decision") \
        .add_subparsers(dest="action", required=True)
    p = command(review, "list", cmd_review_list, "candidates waiting for review")
    p.add_argument("--path")
    p.add_argument("--limit", type=_limit, default=50)
    p.add_argument("--cursor")
    p = command(review, "promote", cmd_review_promote,
                "the change is real: make the candidate active, retire what it contradicts")
    p.add_argument("id", type=_memory_id)
    p = command(review, "reject", cmd_review_reject, "not true: reject the candidate")
    p.add_argument("id", type=_memory_id)
    p.add_argument("--suppress", action="store_true",
                   help="also tombstone its value, so it is blocked wherever it comes back")
    p.add_argument("--until", type=_instant, metavar="INSTANT",
                   help="with --suppress: only until this instant (ISO 8601); after it the "
                        "value may come back, as a candidate for review")
    p = command(review, "merge", cmd_review_merge,
                "the candidate says what an active memory says: merge it into that one")
    p.add_argument("id", type=_memory_id)
    p.add_argument("--into", type=_memory_id, required=True)

    from strata.events.models import TYPES as EVENT_TYPES

    events = sub.add_parser("events", help="the feed of changes to memories") \
        .add_subparsers(dest="action", required=True)
    p = command(events, "tail", cmd_events_tail,
                "print changes to memories you can read, in commit order, from a cursor "
                "(never content: read a memory by its id)")
    p.add_argument("--after", type=_cursor, help="the cursor to resume from (printed last)")
    p.add_argument("--path", help="only at or under this path")
    p.add_argument("--types", type=_event_types(EVENT_TYPES), metavar="TYPE[,TYPE]",
                   help=f"only these types: {', '.join(EVENT_TYPES)}")
    p.add_argument("--limit", type=_limit, default=100, help="events per request")
    p.add_argument("--follow", "-f", action="store_true", help="keep polling for new events")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between polls")

    from strata.rules.categories import CATEGORIES

    rules = sub.add_parser("rules", help="memory rules: what is kept under a path") \
        .add_subparsers(dest="action", required=True)
    p = command(rules, "set", cmd_rules_set,
                "set the rule at a path (owner there); it replaces the rule at that path")
    p.add_argument("path", help="the subtree it governs, e.g. users ('' is the tenant root)")
    p.add_argument("--capture", choices=("on", "off", "review_only"))
    p.add_argument("--exclude", action="append", choices=CATEGORIES,
                   help="keep statements of this category out (repeatable)")
    p.add_argument("--exclude-pattern", action="append", metavar="PATTERN",
                   help="keep statements matching this out: a literal, or /regex/ (repeatable)")
    p.add_argument("--include", action="append", choices=CATEGORIES,
                   help="always keep this category, even where capture is off (repeatable)")
    p.add_argument("--instructions", help="text handed to the model extractor")
    p.add_argument("--retention-days", type=_limit, help="archive memories older than this")
    p.add_argument("--expected-version", type=_limit,
                   help="replace only this version of the rule (compare-and-set)")
    p = command(rules, "list", cmd_rules_list, "rules on paths you can read")
    p.add_argument("--path", help="only at or under this path")
    p = command(rules, "delete", cmd_rules_delete, "remove a rule (owner on its path)")
    p.add_argument("id", type=_rule_id)

    p = command(sub, "export", cmd_export,
                "write a tenant's memories, history, relationships and tombstones as JSON "
                "Lines (operator command, on the database)", http=False)
    p.add_argument("--tenant", required=True, help="tenant name or id")
    p.add_argument("-o", "--output", help=(
        "file to write ('-': stdout); default: stdout when piped or redirected, else a new "
        "file $STRATA_HOME/exports/<tenant>-<UTC time>.jsonl, whose path is printed"))

    p = command(sub, "import", cmd_import,
                "import an export into a tenant, through the write gate; idempotent "
                "(operator command, on the database)", http=False)
    p.add_argument("file", help="the export ('-' reads stdin)")
    p.add_argument("--tenant", required=True, help="tenant name or id")
    p.add_argument("--create-tenant", action="store_true",
                   help="create the tenant when it does not exist (the report holds its "
                   "owner key, shown once); without it, an unknown tenant is an error")
    p.add_argument("--keep-ids", action="store_true",
                   help="keep the export's ids (moving a tenant to another database); default: "
                   "kept when importing into the tenant it came from, else derived")
    p.add_argument("--batch", type=_limit, default=200, help="memories per transaction")
