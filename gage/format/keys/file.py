"""Key files: the public key and the name its owner claims, as people hand them to each other
(`gage key export`; spec/bundle.md section 7). A claim, never a confirmation: only the ceremony
confirms a key. Bytes to values only; reading the file is gage.home.identity.load_key_file's."""

from __future__ import annotations

from gage.format import strictjson
from gage.format.errors import MalformedError
from gage.format.keys import (
    KEYFILE_LIMIT,
    KEYFILE_VERSION,
    MAX_CLAIMED_NAME,
    key_text,
    parse_key,
)
from gage.format.record import Frozen, set_field

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any


class KeyFile(Frozen):
    """A public key and the name its owner claims. A claim, never a confirmation."""

    __slots__ = ("key", "name", "sealing")
    key: bytes
    name: str
    # The sealing-key binding (gage/home/sealing.py) as carried, when the home has a mailbox: a claim too.
    sealing: dict[str, str] | None

    def __init__(
        self, key: bytes, name: str, sealing: dict[str, str] | None = None
    ) -> None:
        set_field(self, "key", key)
        set_field(self, "name", name)
        set_field(self, "sealing", sealing)

    def to_bytes(self) -> bytes:
        obj: dict[str, Any] = {"gage-key": KEYFILE_VERSION, "key": key_text(self.key), "name": self.name}
        if self.sealing is not None:
            obj["sealing"] = self.sealing
        return strictjson.dumps(obj) + b"\n"

    @classmethod
    def parse(cls, data: bytes, *, path: str | None = None) -> KeyFile:
        """spec/bundle.md section 7. The cap is on the whole file, newlines included; the
        writer's final newline needs no stripping, since strict JSON allows white space
        around the object."""
        try:
            obj = strictjson.loads(data, limit=KEYFILE_LIMIT, what="key file")
        except MalformedError as exc:
            raise MalformedError(exc.message, path=path) from exc
        if not isinstance(obj, dict):
            raise MalformedError("a key file is a JSON object", path=path)
        version = obj.get("gage-key")
        if version != KEYFILE_VERSION or isinstance(version, bool):  # true == 1 in Python
            raise MalformedError(f"not a gage key file of version {KEYFILE_VERSION}", path=path, field="gage-key")
        extra = set(obj) - {"gage-key", "key", "name", "sealing"}
        if extra:
            raise MalformedError(f"unknown fields {sorted(extra)}", path=path)
        try:
            key = parse_key(obj.get("key"))
        except MalformedError as exc:
            raise MalformedError(exc.message, path=path, field="key") from exc
        name = obj.get("name", "")
        if not isinstance(name, str) or len(name) > MAX_CLAIMED_NAME:
            raise MalformedError(f"name must be a string of at most {MAX_CLAIMED_NAME} characters", path=path, field="name")
        # A sealing key the owner carries in the file (spec/relay.md): kept as given here; whether
        # it is well formed and bound is gage.home.sealing's to check (gage.home.identity.load_key_file).
        carried = obj.get("sealing")
        if carried is not None and not (isinstance(carried, dict) and all(isinstance(v, str) for v in carried.values())):
            raise MalformedError("sealing must be an object of strings (a carried binding, spec/relay.md)", path=path, field="sealing")
        return cls(key=key, name=name, sealing=carried)
