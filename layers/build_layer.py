"""Install a layer's requirements into a folder, as sam build's python3.11 builder would, minus
what the functions already have. The Makefile's build-StrataLayer and build-McpLayer targets
run it (BuildMethod: makefile in template.yaml).

Like the python3.11 builder: pip, wheels for Lambda's platform (manylinux2014 x86_64,
CPython 3.11). Unlike it:

- Bytecode ships, compiled for CPython 3.11 with unchecked-hash pyc files (valid whatever the
  zip does to file times; a layer never changes once published). /opt is read-only on
  Lambda, so without them every cold start compiles every module it imports: the memories
  function imported in about 1 s from a layer without bytecode and in 0.4 s with it. About
  +19.5 MB unzipped for the core layer (openai alone 8 MB: importing it loads 545 modules).
  Built by another Python, no bytecode is written (3.11 would ignore it).
- What the python3.11 runtime ships is left out, with whatever only it needs: boto3, botocore
  and s3transfer, so also python-dateutil, six and urllib3 (jmespath stays: Powertools needs
  it too). aws-xray-sdk, which Powertools' Tracer imports, depends on botocore: 30 MB the
  runtime already has.
- Data a distribution ships that strata never reads is removed (``PRUNE``): simplemma's
  lemma dictionaries for 48 languages other than English, 18 of its 19 MB
  (strata.write.lexical lemmatises English only; simplemma finds its languages by listing
  that folder, so the rest still load), pydantic's v1 API (2 MB with its bytecode) and the
  Swagger UI bundle of Powertools' API handler (1.7 MB; strata's API is FastAPI), and the
  Powertools utilities that neither strata nor Powertools' own modules import (idempotency,
  batch, kafka, feature flags, ...: about 1.5 MB with their bytecode).
  Distributions only a part of a dependency strata never uses imports are left out
  (``UNUSED``: pyyaml, 3 MB, which detect-secrets needs for scanning YAML files).
- ``--beside REQUIREMENTS``: the layer is always used together with the layer built from those
  requirements (the MCP layer beside the core layer). Shared dependencies are pinned to the
  versions that layer gets and left to it, so no package is in both: Lambda unpacks all layers
  into one /opt, where two versions of a package would mix file by file.

Usage: python layers/build_layer.py TARGET -r requirements.txt [--beside core.txt] [--copy DIR]
"""

from __future__ import annotations

import argparse
import compileall
import json
import py_compile
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pip always carries a copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name

RUNTIME = {"boto3", "botocore", "s3transfer"}
# Distributions a dependency declares that strata's use of it never imports: pyyaml, which
# detect-secrets needs only to scan YAML files (strata scans strings; tests/infra imports
# every handler from the built layer alone).
UNUSED = {"pyyaml"}
# folder inside the layer -> the files in it to keep (every other file there is removed), or
# None: the folder goes. pydantic.v1 is pydantic 1's API, which nothing in the layer imports.
PRUNE: dict[str, set[str] | None] = {
    "simplemma/strategies/dictionaries/data": {"en.plzma"},
    "pydantic/v1": None,
    # Powertools' own API handler serves Swagger UI from these; strata's API is FastAPI.
    "aws_lambda_powertools/event_handler/openapi/swagger_ui": {"__init__.py", "html.py",
                                                               "oauth2.py"},
    # Powertools utilities nothing in the layer imports, Powertools' own modules included
    # (strata uses its Logger, Metrics, Tracer and parameters).
    **{f"aws_lambda_powertools/utilities/{name}": None for name in (
        "auth_alpha", "batch", "circuit_breaker", "data_masking", "feature_flags",
        "idempotency", "kafka", "streaming")},
}
PLATFORM = ["--platform", "manylinux2014_x86_64", "--implementation", "cp",
            "--python-version", "3.11", "--abi", "cp311", "--only-binary=:all:"]
# Environment markers as the python3.11 runtime evaluates them.
MARKERS = {"python_version": "3.11", "python_full_version": "3.11.0", "os_name": "posix",
           "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True)


def roots(requirements: Path) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in requirements.read_text().splitlines())
    return [Requirement(line) for line in lines if line and not line.startswith("-")]


def resolve(requirements: Path, constraints: dict[str, str]) -> dict[str, dict]:
    """Name -> metadata of every distribution pip installs for the requirements."""
    with tempfile.TemporaryDirectory() as tmp:
        report, pins = Path(tmp, "report.json"), Path(tmp, "pins.txt")
        pins.write_text("".join(f"{name}=={version}\n" for name, version in constraints.items()))
        pip("install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
            "--target", str(Path(tmp, "unused")), *PLATFORM, "-r", str(requirements),
            "-c", str(pins))
        installs = json.loads(report.read_text())["install"]
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"] for i in installs}


def reachable(requirements: list[Requirement], resolved: dict[str, dict], provided: set[str]) -> set[str]:
    """Distributions the requirements need, following dependencies (with their extras and
    markers) but not through anything `provided`."""
    found: set[str] = set()
    seen: set[tuple[str, frozenset]] = set()
    todo = [r for r in requirements if r.marker is None or r.marker.evaluate(MARKERS)]
    while todo:
        req = todo.pop()
        name, extras = canonicalize_name(req.name), frozenset(req.extras)
        if name in provided or (name, extras) in seen:
            continue
        seen.add((name, extras))
        found.add(name)
        for dep in map(Requirement, resolved[name].get("requires_dist") or []):
            if dep.marker is None or any(dep.marker.evaluate({**MARKERS, "extra": e})
                                         for e in extras | {""}):
                todo.append(dep)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("-r", dest="requirements", type=Path, required=True)
    parser.add_argument("--beside", type=Path, help="requirements of the layer used alongside")
    parser.add_argument("--copy", type=Path, action="append", default=[],
                        help="a package folder to copy in as it is (symlinks followed)")
    args = parser.parse_args()

    provided, pins = set(RUNTIME) | UNUSED, {}
    if args.beside:
        other = resolve(args.beside, {})
        provided |= reachable(roots(args.beside), other, RUNTIME)
        pins = {name: meta["version"] for name, meta in other.items()}
    resolved = resolve(args.requirements, pins)
    names = sorted(reachable(roots(args.requirements), resolved, provided))
    left_out = sorted(set(resolved) - set(names))
    print(f"{args.target}: {len(names)} distributions; left out: {', '.join(left_out) or 'none'}")
    pip("install", "--quiet", "--no-deps", "--no-compile", "--target", str(args.target), *PLATFORM,
        *(f"{name}=={resolved[name]['version']}" for name in names))
    # Console scripts, whose #! names the build machine's interpreter: nothing on Lambda runs them.
    shutil.rmtree(args.target / "bin", ignore_errors=True)
    prune(args.target)
    for folder in args.copy:
        shutil.copytree(folder, args.target / folder.name, symlinks=False,
                        ignore=shutil.ignore_patterns("__pycache__"))
    compile_bytecode(args.target)


def prune(target: Path) -> None:
    for folder, keep in PRUNE.items():
        path = target / folder
        if not path.is_dir():
            continue
        if keep is None:
            shutil.rmtree(path)
            print(f"{target}: {folder}: removed")
            continue
        gone = [f for f in path.iterdir() if f.is_file() and f.name not in keep]
        for f in gone:
            f.unlink()
        print(f"{target}: {folder}: kept {', '.join(sorted(keep))}, removed {len(gone)} files")


def compile_bytecode(target: Path) -> None:
    if sys.version_info[:2] != (3, 11):
        print(f"{target}: no bytecode: built by Python {sys.version_info[0]}.{sys.version_info[1]}, "
              "Lambda runs 3.11", file=sys.stderr)
        return
    ok = compileall.compile_dir(target, quiet=1, workers=0,
                                invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    if not ok:
        # A file that does not compile (a template, a Python-2 leftover) fails only if imported.
        print(f"{target}: some files did not compile; they are left as source", file=sys.stderr)


if __name__ == "__main__":
    main()
