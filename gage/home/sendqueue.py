"""The deliveries this home made or is waiting to make: one small file each, no policy.

`deliver` writes a delivery here before it first tries the way, so a process killed at any point
leaves it either still to go or done, never forgotten (spec/relay.md, "The outbox"). Each
delivery is a folder `deliveries/<id>/` holding `delivery.json`, replaced atomically at every
change of state; the folder is also the delivery's lock (`flock` on its descriptor), so two
senders (a `gage watch` and a `gage outbox send`) never try the same delivery at once, while
the home lock stays free for everything else during a slow network call.

What a delivery file holds is what the sent bundle already tells anyone who can read the home:
its id, the contact's name and key, the way and a random message id. No credential is kept,
only the path of a file the person named (`--creds`, `--token-file`), read again at each try.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gage.bundle import atomic
from gage.format import strictjson
from gage.format.errors import GageError, GageIOError, MalformedError, NotFoundError
from gage.home import homefile
from gage.home.layout import Home

VERSION = 1
FILE = "delivery.json"
LIMIT = 64 * 1024
STATES = ("sending", "queued", "delivered", "cancelled")
# `sending`: a try is under way (or the process trying was killed: then it is queued).
WAITING = ("sending", "queued")
ROUTES = ("mailbox", "a2a", "folder")


def now_text() -> str:
    """UTC with microseconds: delivery files sort oldest first by it."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


@dataclass
class Delivery:
    id: str
    bundle: str
    to: str  # the name given to `--to`: looked up again at every try
    key: str  # the contact's key text when it was made (what a try that follows a new key records)
    route: str  # the way it was to go when made; every try chooses again from the contact's "where"
    via: str | None  # the way the person asked for (`--via`), or None: the first known
    msg_id: str  # the relay's deduplication id, the same at every try (spec/relay.md)
    queued_at: str
    state: str = "sending"
    unconfirmed: bool = False
    relay: str | None = None  # `--relay URL` as given (no user or password: refused before)
    creds: dict[str, str | None] = field(default_factory=dict)  # paths of the credential files given
    token_file: str | None = None
    tries: int = 0
    last_try: str | None = None
    last_error: str | None = None
    next_try: str | None = None
    attempt: str | None = None  # a try began at this time and its outcome was not yet written
    done_at: str | None = None
    ack: dict[str, Any] | None = None  # who acknowledged it, and what they said
    why: str | None = None  # why it was cancelled

    @property
    def waiting(self) -> bool:
        return self.state in WAITING

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, **{f.name: getattr(self, f.name) for f in fields(self)}}

    @classmethod
    def from_json(cls, doc: Any, path: Path) -> Delivery:
        """A delivery file's contents, every field checked: a file damaged by hand is an error naming it."""
        if not isinstance(doc, dict) or doc.get("version") != VERSION:
            raise MalformedError("is not a delivery file of version 1", path=str(path))
        known = {f.name for f in fields(cls)}
        extra = set(doc) - known - {"version"}
        if extra:
            raise MalformedError(f"has fields no delivery has: {', '.join(sorted(extra))}", path=str(path))
        need_str = ("id", "bundle", "to", "key", "route", "msg_id", "queued_at", "state")
        for name in need_str:
            if not isinstance(doc.get(name), str) or not doc[name]:
                raise MalformedError("is missing a text field", path=str(path), field=name)
        for name in ("via", "relay", "token_file", "last_try", "last_error", "next_try", "attempt", "done_at", "why"):
            if doc.get(name) is not None and not isinstance(doc[name], str):
                raise MalformedError("is not text", path=str(path), field=name)
        if doc["state"] not in STATES:
            raise MalformedError(f"is not one of {', '.join(STATES)}", path=str(path), field="state")
        if doc["route"] not in ROUTES or doc.get("via") not in (None, *ROUTES):
            raise MalformedError(f"is not one of {', '.join(ROUTES)}", path=str(path), field="route")
        if not isinstance(doc.get("tries", 0), int) or isinstance(doc.get("tries"), bool) or doc.get("tries", 0) < 0:
            raise MalformedError("is not a count", path=str(path), field="tries")
        if not isinstance(doc.get("unconfirmed", False), bool):
            raise MalformedError("is not true or false", path=str(path), field="unconfirmed")
        creds = doc.get("creds", {})
        if not isinstance(creds, dict) or not all(isinstance(v, str | None) for v in creds.values()):
            raise MalformedError("is not a map of file paths", path=str(path), field="creds")
        if doc.get("ack") is not None and not isinstance(doc["ack"], dict):
            raise MalformedError("is not an object", path=str(path), field="ack")
        if doc["id"] != path.parent.name:
            raise MalformedError("names another delivery than its folder", path=str(path), field="id")
        for name in ("queued_at", "last_try", "next_try", "attempt", "done_at"):
            if doc.get(name) is not None:
                try:
                    parse_time(doc[name])
                except ValueError:
                    raise MalformedError("is not a time gage wrote", path=str(path), field=name) from None
        return cls(**{k: v for k, v in doc.items() if k != "version"})


@dataclass(frozen=True)
class Damaged:
    """A delivery file that cannot be read as one: reported by name, never sent."""

    path: Path
    problem: str


def folder(home: Home) -> Path:
    return home.root / "deliveries"


def path_of(home: Home, delivery_id: str) -> Path:
    return folder(home) / delivery_id / FILE


def new(home: Home, **values: Any) -> Delivery:
    """A new delivery, written (state `sending`, or as given) before anything leaves the home."""
    return create(home, Delivery(id=new_id(), msg_id=secrets.token_hex(16), queued_at=now_text(), **values))


def new_id() -> str:
    return secrets.token_hex(8)


def create(home: Home, d: Delivery) -> Delivery:
    """Write `d` as a new delivery (its folder made first)."""
    box = folder(home)
    try:
        box.mkdir(mode=0o700, exist_ok=True)
        (box / d.id).mkdir(mode=0o700)
    except OSError as exc:
        raise GageIOError(f"cannot keep the delivery: {exc.strerror or exc}", path=str(box)) from exc
    save(home, d)
    atomic.fsync_dir(box)
    return d


def save(home: Home, d: Delivery) -> None:
    atomic.write_bytes(path_of(home, d.id), strictjson.dumps(d.to_json()), mode=0o600)


def read(home: Home, delivery_id: str) -> Delivery:
    """One delivery by its id; a damaged file is a MalformedError naming it."""
    if not delivery_id or not all(c in "0123456789abcdef" for c in delivery_id):
        raise MalformedError(f"{delivery_id!r} is not a delivery id (hex digits, as `gage outbox` lists them)")
    path = path_of(home, delivery_id)
    data = homefile.read_bytes(path, "delivery", LIMIT)
    if data is None:
        raise GageIOError("no such delivery", path=str(path))
    try:
        doc = strictjson.loads(data, limit=LIMIT, what="a delivery file")
    except MalformedError as exc:
        raise MalformedError(exc.message, path=str(path), field=exc.field) from None
    return Delivery.from_json(doc, path)


def resolve(home: Home, ref: str) -> Delivery:
    """A delivery by its id or a prefix of it (at least 4 digits), as bundles are named."""
    ref = ref.strip().lower()
    box = folder(home)
    names = sorted(p.name for p in box.iterdir()) if box.is_dir() else []
    hits = [n for n in names if n.startswith(ref)] if len(ref) >= 4 else [n for n in names if n == ref]
    if len(hits) != 1:
        said = "no delivery" if not hits else f"{len(hits)} deliveries"
        raise NotFoundError(f"{said} matches {ref!r}: `gage outbox --all` lists them")
    return read(home, hits[0])


# Deliveries read before, by file: (inode, size, mtime) and what it held. A file is replaced by a
# rename at every change, so the same inode, size and time is the same file: `gage watch` looks at
# every delivery each second, and one done long ago is not read again.
_READ: dict[Path, tuple[tuple[int, int, int], Delivery]] = {}


def _read_kept(home: Home, delivery_id: str) -> Delivery:
    path = path_of(home, delivery_id)
    try:
        st = os.stat(path, follow_symlinks=False)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = None
    kept = _READ.get(path)
    if stamp is not None and kept is not None and kept[0] == stamp:
        return replace(kept[1])
    d = read(home, delivery_id)
    if stamp is not None:
        _READ[path] = (stamp, replace(d))
    return d


def load_all(home: Home) -> tuple[list[Delivery], list[Damaged]]:
    """Every delivery, oldest first, and every delivery file that could not be read (by name)."""
    box = folder(home)
    if not box.is_dir():
        return [], []
    found: list[Delivery] = []
    damaged: list[Damaged] = []
    for entry in sorted(box.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir() or entry.is_symlink():
            if not entry.name.startswith("."):
                damaged.append(Damaged(entry, "is not a delivery folder"))
            continue
        try:
            found.append(_read_kept(home, entry.name))
        except GageError as exc:
            damaged.append(Damaged(Path(exc.path or entry), f"{exc.message}" + (f" (field {exc.field})" if exc.field else "")))
    found.sort(key=lambda d: (d.queued_at, d.id))
    return found, damaged


@contextlib.contextmanager
def held(home: Home, delivery_id: str) -> Iterator[bool]:
    """The delivery's own lock, taken without waiting: True if this process holds it now.

    Held by whoever tries it, for the whole try; a process killed while trying lets it go.
    """
    try:
        fd = os.open(folder(home) / delivery_id, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise GageIOError(f"cannot open the delivery: {exc.strerror}", path=str(folder(home) / delivery_id)) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing lets the lock go


def states_by_bundle(home: Home) -> dict[str, dict[str, Any]]:
    """For the views of sent bundles: each bundle's latest delivery per contact, in a few words."""
    deliveries, _damaged = load_all(home)
    out: dict[str, dict[str, Any]] = {}
    for d in deliveries:
        shown = {"id": d.id, "to": d.to, "state": "queued" if d.state == "sending" else d.state, "route": d.route,
                 "since": d.done_at or d.queued_at, "tries": d.tries}
        if d.last_error and d.waiting:
            shown["last_error"] = d.last_error
        per = out.setdefault(d.bundle, {"state": shown["state"], "deliveries": []})
        per["deliveries"] = [x for x in per["deliveries"] if x["to"] != d.to] + [shown]
        per["state"] = summary_state([x["state"] for x in per["deliveries"]])
    return out


def summary_state(states: list[str]) -> str:
    """One word for a bundle sent to several: queued while any is, then delivered if any was."""
    for word in ("queued", "delivered", "cancelled"):
        if word in states:
            return word
    return "queued"


def queued_count(home: Home) -> int:
    deliveries, _damaged = load_all(home)
    return sum(1 for d in deliveries if d.waiting)


def with_delivery(home: Home, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`gage list --json` rows (and MCP's), each sent bundle's row with its `delivery`: the state of its
    deliveries (queued, delivered, cancelled), or null for one never given to `deliver`."""
    if not any(r.get("state") == "outbox" for r in rows):
        return rows
    states = states_by_bundle(home)
    return [{**r, "delivery": states.get(str(r.get("id")))} if r.get("state") == "outbox" else r for r in rows]
