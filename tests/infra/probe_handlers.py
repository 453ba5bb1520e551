"""Import every function's handler as Lambda would and report what each one serves.

Run in a fresh interpreter by tests/infra (``python probe_handlers.py < spec.json``); prints
one JSON document. The spec lists ``{"name", "code_uri", "handler"}`` per function. For
each: the handler module is imported from its CodeUri folder alone on ``sys.path[0]`` (the
layer's packages come from the environment), its attribute must be callable, and when the
handler is an API handler (``handler.asgi``, its Mangum adapter: strata.api.lambda_handler),
every route of the full core app (create_app() with all routers) is matched against that
adapter's app: ``served`` lists the core routes it answers.
No database, network or AWS call happens: importing a handler must not need one.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import traceback

PARAM = re.compile(r"\{[^}]+\}")
SAMPLE_ID = "11111111-1111-4111-8111-111111111111"


def core_routes() -> list[tuple[str, str]]:
    from starlette.routing import Route

    from strata.api.app import create_app
    from strata.api.openapi import flat_routes

    app = create_app()
    routes = [(method.upper(), path) for path, ops in app.openapi()["paths"].items()
              for method in ops]
    # Routes outside the OpenAPI schema (the document and its viewers, the console's files, the
    # raw /mcp endpoint), those of included routers too (flat_routes); methods None = any.
    for route in flat_routes(app.router.routes):
        if isinstance(getattr(route, "original_route", route), Route) \
                and not route.include_in_schema:
            methods = sorted(route.methods - {"HEAD"}) if route.methods else ["ANY"]
            routes += [(m, route.path) for m in methods]
    return sorted(set(routes))


def serves(app, method: str, path: str) -> bool:
    from starlette.routing import Match

    concrete = PARAM.sub(SAMPLE_ID, path)
    scope = {"type": "http", "method": "POST" if method == "ANY" else method,
             "path": concrete, "root_path": "", "headers": [], "query_string": b""}
    return any(route.matches(scope)[0] == Match.FULL for route in app.router.routes)


def probe(spec: dict, routes: list[tuple[str, str]]) -> dict:
    module_name, attribute = spec["handler"].rsplit(".", 1)
    sys.path.insert(0, spec["code_uri"])
    try:
        for name in [n for n in sys.modules if n == module_name or n.startswith(module_name + ".")]:
            del sys.modules[name]
        module = importlib.import_module(module_name)
        target = getattr(module, attribute)
        out = {"imported": True, "callable": callable(target), "served": None}
        # An API handler's Mangum adapter (strata.api.lambda_handler), which keeps the app.
        app = getattr(getattr(target, "asgi", None), "app", None)
        if app is not None and hasattr(app, "router"):
            out["served"] = [[m, p] for m, p in routes if serves(app, m, p)]
        return out
    except Exception:
        return {"imported": False, "error": traceback.format_exc(limit=5)}
    finally:
        sys.path.remove(spec["code_uri"])


def main() -> None:
    specs = json.load(sys.stdin)
    routes = core_routes()
    report = {"core_routes": routes, "functions": {s["name"]: probe(s, routes) for s in specs}}
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
