"""Commands of the accept gate: accept, reject, watch."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    pass
