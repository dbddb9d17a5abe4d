"""Errors typed by the stage that caught them.

A caller (the CLI, the TUI, a script) must be able to tell a malformed bundle from a
tampered one from a forged one without parsing messages, so each stage has its own
class and its own exit code. Every error names the file or field at fault.
"""

from __future__ import annotations

from enum import IntEnum

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from gage.format.vocab import Stage

# The longest an error's message and field name may be. Messages repeat untrusted
# text (a part's name, a card's field); each such string is cut where it is quoted
# (`sanitize.cut`), and this bound catches any that is not, so no error line is ever the
# sender's megaphone. spec/cli.md, "Errors", documents both numbers.
MESSAGE_LIMIT = 2000
FIELD_LIMIT = 300


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters in all)"


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
    A2A_DISCOVERY = 10  # gage.carriers.a2a.live: no gage agent found at the URL
    A2A_REFUSED = 11  # gage.carriers.a2a.live: the agent was reached and said no
    A2A_TRANSPORT = 12  # gage.carriers.a2a.live: the network failed
    PASSPHRASE = 13  # gage.format.keys.seal: a wrong passphrase, or none could be asked for
    A2A_UNCONFIRMED = 14  # gage.carriers.a2a.live: the agent answered, but never confirmed the delivery
    RELAY = 15  # gage.carriers.relay: the relay was unreachable, or refused or failed what was asked
    QUEUED = 16  # gage.carriers.outbox: the way was not there; the delivery waits in the outbox


class GageError(Exception):
    """Base of every error gage raises on purpose."""

    stage: Stage = "error"
    exit_code = Exit.FAILED
    # The way was not there (a relay down, an agent not answering, a drop folder missing): trying
    # again later may work, so `deliver` keeps the delivery in the outbox instead of failing.
    retryable = False

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None) -> None:
        message = _bounded(message, MESSAGE_LIMIT)
        super().__init__(message)
        self.message = message
        self.path = _bounded(path, MESSAGE_LIMIT) if path is not None else None
        self.field = _bounded(field, FIELD_LIMIT) if field is not None else None

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


class PassphraseError(GageError):
    """The identity is passphrase-protected and the passphrase given is wrong, empty, or could not be asked for."""

    stage = "passphrase"
    exit_code = Exit.PASSPHRASE
