"""What every command's parser shares: value checks for options (argparse turns
ArgumentTypeError into a usage error, exit 2, so a bad number is refused before any command
code runs), and `--json`."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError("it must be at least 1")
    return n


def seconds(text: str) -> float:
    try:
        n = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= n <= 3600:
        raise argparse.ArgumentTypeError("give between 0 and 3600 seconds")
    return n


def max_bytes(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes") from None
    if not 1024 <= n <= 1 << 40:
        raise argparse.ArgumentTypeError("give between 1024 and 2**40 bytes")
    return n


def port(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError("a port is a number from 0 to 65535")
    return n


def json_option(p: argparse.ArgumentParser, what: str | None = None) -> None:
    p.add_argument(
        "--json",
        action="store_true",
        help=what or 'print the result as one JSON document (a failure as {"error": {"stage", "message", ...}})',
    )
