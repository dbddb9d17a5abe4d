"""A name clash in the ceremony, found before anyone reads a word, so a clash never wastes a ceremony.

`Contacts.clash` decides (one rule); this says what it found, so the command line and the
interface can each word what to do in their own terms (`gage contacts remove`, or d in
Contacts) without a second copy of the rule.
"""

from __future__ import annotations

from gage.format.record import Frozen, set_field

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Literal


class Clash(Frozen):
    """A name or key the ceremony must refuse, found before any word is read: `name` is the
    name asked for ("name-taken", "retired") or the one the key already has ("key-named")."""

    __slots__ = ("why", "name")
    why: Literal["retired", "name-taken", "key-named"]
    name: str

    def __init__(
        self, why: Literal["retired", "name-taken", "key-named"], name: str
    ) -> None:
        set_field(self, "why", why)
        set_field(self, "name", name)

    def cli_text(self) -> str:
        if self.why == "retired":
            return "this key was retired by a statement it signed; a retired key is never confirmed again"
        if self.why == "name-taken":
            return (
                f"a different key is already confirmed as {self.name!r}; remove it first "
                f"(`gage contacts remove {self.name}`, if they really have a new key) or choose another --name"
            )
        return f"this key is already confirmed as {self.name!r}; nothing to do (or remove {self.name!r} first to rename)"
