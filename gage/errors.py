"""Errors typed by the stage that caught them.

A caller (the CLI, the TUI, a script) must be able to tell a malformed bundle from a
tampered one from a forged one without parsing messages, so each stage has its own
class and its own exit code. Every error names the file or field at fault.
"""

from __future__ import annotations

from enum import IntEnum

from .vocab import Stage


class Exit(IntEnum):
    """Process exit codes, one per stage. Part of the CLI contract (spec/cli.md)."""

    OK = 0
    FAILED = 1  # the command ran but the answer is "no" (e.g. a journal that does not verify)
    USAGE = 2
    MALFORMED = 3
    TAMPERED = 4
    BAD_SIGNATURE = 5
    UNKNOWN_KEY = 6
    IO = 7
    NOT_FOUND = 8
    REFUSED = 9
    A2A_DISCOVERY = 10  # gage.a2a.live: no gage agent found at the URL
    A2A_REFUSED = 11  # gage.a2a.live: the agent was reached and said no
    A2A_TRANSPORT = 12  # gage.a2a.live: the network failed
    RELAY = 13  # gage.relay: the relay was unreachable, or refused or failed what was asked


class GageError(Exception):
    """Base of every error gage raises on purpose."""

    stage: Stage = "error"
    exit_code = Exit.FAILED

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.field = field

    def where(self) -> str:
        parts = []
        if self.path:
            parts.append(self.path)
        if self.field:
            parts.append(f"field {self.field}")
        return ": ".join(parts)

    def __str__(self) -> str:
        where = self.where()
        return f"{where}: {self.message}" if where else self.message

    def to_json(self) -> dict[str, str | None]:
        return {"stage": self.stage, "path": self.path, "field": self.field, "message": self.message}


class MalformedError(GageError):
    """The input is not a well-formed gage object: bad JSON, unknown version or kind, bad layout."""

    stage = "malformed"
    exit_code = Exit.MALFORMED


class TamperedError(GageError):
    """The structure is fine but the bytes do not match what the manifest commits to."""

    stage = "tampered"
    exit_code = Exit.TAMPERED


class BadSignatureError(GageError):
    """The signature is missing, the wrong length, or does not verify over the manifest bytes."""

    stage = "signature"
    exit_code = Exit.BAD_SIGNATURE


class UnknownKeyError(GageError):
    """A key or contact the operation needs is not known (or not confirmed) here."""

    stage = "unknown-key"
    exit_code = Exit.UNKNOWN_KEY


class GageIOError(GageError):
    """The file system failed us: permissions, a missing home, a full disk."""

    stage = "io"
    exit_code = Exit.IO


class NotFoundError(GageError):
    """No bundle matches an id or prefix, or the prefix matches more than one."""

    stage = "not-found"
    exit_code = Exit.NOT_FOUND


class RefusedError(GageError):
    """The operation is well-formed but gage will not do it (overwrite an identity, accept an invalid bundle)."""

    stage = "refused"
    exit_code = Exit.REFUSED


class UsageError(GageError):
    stage = "usage"
    exit_code = Exit.USAGE
