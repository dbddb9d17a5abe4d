"""What a check found: `Problem` (one, with the stage that caught it) and `Check` (the whole).

Apart from the checker (`gage.bundle.checking`, which re-exports both) so a reader of kept
checks (the row index, the verdict, the check cache) does not load the walk, the hashing and
the checker itself to hold one (start-up).
"""

from __future__ import annotations

from pathlib import Path

from gage.format.errors import (
    BadSignatureError,
    GageError,
    GageIOError,
    MalformedError,
    TamperedError,
)
from gage.format.manifest import Manifest
from gage.format.record import Record
from gage.format.sanitize import json_text

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from gage.format.vocab import ProblemStage

# The order in which stages are checked; the first failing stage decides the exit code.
STAGE_ORDER = ("malformed", "signature", "tampered")


class Problem(Record):
    __slots__ = ("stage", "path", "message", "field")
    stage: ProblemStage
    path: str | None
    message: str
    field: str | None

    def __init__(
        self,
        stage: ProblemStage,
        path: str | None,
        message: str,
        field: str | None = None,
    ) -> None:
        self.stage = stage
        self.path = path
        self.message = message
        self.field = field

    def to_json(self) -> dict[str, str | None]:
        # A name read from disk that is not UTF-8 holds lone surrogates, which no strict JSON
        # reader (gage's own included) accepts: each such byte is U+FFFD here (spec/cli.md).
        return {
            "stage": self.stage,
            "path": json_text(self.path) if self.path is not None else None,
            "field": self.field,
            "message": json_text(self.message),
        }

    def __str__(self) -> str:
        where = self.path or ""
        if self.field:
            where = f"{where}: field {self.field}" if where else f"field {self.field}"
        return f"{where}: {self.message}" if where else self.message

    def to_error(self) -> GageError:
        cls = {"malformed": MalformedError, "signature": BadSignatureError, "tampered": TamperedError, "io": GageIOError}.get(
            self.stage, GageError
        )
        return cls(self.message, path=self.path, field=self.field)

    @classmethod
    def of(cls, err: GageError) -> Problem:
        return cls(stage=err.stage, path=err.path, message=err.message, field=err.field)


class Check(Record):
    """What a directory turned out to be. `manifest` is None when it could not be parsed."""

    __slots__ = (
        "path",
        "manifest",
        "signature",
        "problems",
        "warnings",
        "signature_verified",
    )
    path: Path
    manifest: Manifest | None
    signature: bytes | None
    problems: list[Problem]
    warnings: list[Problem]
    # True only once the signature has been checked and verified. A manifest.sig that
    # cannot be read safely (a symlink, a FIFO, a directory) is a `tampered` problem, not
    # a `signature` one, yet proves nothing: the stages alone cannot say it verified.
    signature_verified: bool

    def __init__(
        self,
        path: Path,
        manifest: Manifest | None = None,
        signature: bytes | None = None,
        problems: list[Problem] | None = None,
        warnings: list[Problem] | None = None,
        signature_verified: bool = False,
    ) -> None:
        self.path = path
        self.manifest = manifest
        self.signature = signature
        self.problems = [] if problems is None else problems
        self.warnings = [] if warnings is None else warnings
        self.signature_verified = signature_verified

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def id(self) -> str | None:
        return self.manifest.id if self.manifest else None

    @property
    def signature_ok(self) -> bool:
        return self.manifest is not None and self.signature_verified

    def first_error(self) -> GageError | None:
        for stage in STAGE_ORDER:
            for p in self.problems:
                if p.stage == stage:
                    return p.to_error()
        return self.problems[0].to_error() if self.problems else None

    def to_json(self) -> dict[str, object]:
        return {
            "path": json_text(str(self.path)),
            "id": self.id,
            "ok": self.ok,
            "problems": [p.to_json() for p in self.problems],
            "warnings": [p.to_json() for p in self.warnings],
        }
