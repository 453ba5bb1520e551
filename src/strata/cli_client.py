"""Client-side ``strata`` commands: they talk to a running strata over HTTP (``STRATA_URL``,
``STRATA_KEY``) through :mod:`strata.client`."""

from __future__ import annotations

import argparse


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the client-side commands to the ``strata`` parser."""
