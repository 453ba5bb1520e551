"""/openapi.json, /docs (Swagger UI) and /redoc (ReDoc), served by the app itself.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so on a machine without internet
/docs is blank. Here every script, stylesheet and icon comes from /docs/assets/, out of the
files the fastapi-offline distribution ships (Swagger UI and ReDoc's standalone bundle): no
page names another origin, and a Content-Security-Policy keeps a bundle from reaching one.
Nothing of that package is imported; its files are only read.

On AWS these routes go to the health function (template.yaml), with no authorizer: the
document describes the API, not a tenant's data. It describes the whole API whichever routers
the serving app has (:func:`strata.api.openapi.install`).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from strata.foundation.errors import NotFound

router = APIRouter(include_in_schema=False)

ASSETS = "/docs/assets"
# name -> media type: the only files served, so no request names any other file of the disk.
FILES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}
# The bundles change only with the package; a browser may keep them for a day.
CACHE = {"Cache-Control": "public, max-age=86400"}
# The pages may load and call nothing but this origin, whatever a bundle asks for: ReDoc's
# footer shows Redocly's logo from its CDN (it hides the image when it does not load). The
# viewers' bootstrap scripts are inline and their styles injected, hence 'unsafe-inline';
# ReDoc's search runs in a worker made from a blob.
PAGE = {"Content-Security-Policy": "; ".join((
    "default-src 'self'", "script-src 'self' 'unsafe-inline'",
    "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "font-src 'self' data:",
    "connect-src 'self'", "worker-src 'self' blob:", "frame-ancestors 'none'"))}

SWAGGER_UI = {
    # The key typed into Authorize survives a reload of the page (kept in the browser's local
    # storage, on this origin only).
    "persistAuthorization": True,
    # Swagger UI would otherwise send the document to validator.swagger.io for a badge.
    "validatorUrl": None,
    "displayRequestDuration": True,
    "tryItOutEnabled": False,
}


@functools.cache
def _asset_dir() -> Path:
    spec = importlib.util.find_spec("fastapi_offline")  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("fastapi-offline is not installed: /docs has no Swagger UI to serve")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


@router.get("/openapi.json")
def openapi(request: Request) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    page = get_swagger_ui_html(
        openapi_url=f"{root}/openapi.json", title=f"{request.app.title} - Swagger UI",
        swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
        oauth2_redirect_url=None, swagger_ui_parameters=SWAGGER_UI,
    )
    page.headers.update(PAGE)
    return page


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    page = get_redoc_html(
        openapi_url=f"{root}/openapi.json", title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
        redoc_favicon_url=f"{root}{ASSETS}/favicon.png", with_google_fonts=False,
    )
    page.headers.update(PAGE)
    return page


@router.get(ASSETS + "/{name}")
def asset(name: str) -> FileResponse:
    if name not in FILES:
        raise NotFound("asset", name)
    return FileResponse(_asset_dir() / name, media_type=FILES[name], headers=CACHE)
