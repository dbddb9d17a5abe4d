"""`gage deliver ID --to NAME`: the way a bundle goes to a contact, chosen from where they are.

A contact's "where" (gage.home.whereabouts) is a claim: a mailbox on a relay, an A2A agent's
URL, a drop folder. Delivery goes to the mailbox when one is known (sealed to their bound
sealing key, gage.carriers.relay.deliver), else to the A2A agent (gage.carriers.a2a.client),
else into the drop folder, or to the one the person names with `--via`. Whichever way, the
recipient rule is gage.carriers.recipient's (a confirmed contact, a candidate only with
`--unconfirmed`), and the output says where it went and that the where is a claim.

The relay and A2A need optional extras, imported only when that way is taken; the folder
needs none. Into a folder the bundle is copied as a sync tool would carry it: under a
hidden temporary name, every file and folder fsynced, checked, then renamed into view, so
a watcher on the other side never sees a partial bundle.
"""

from __future__ import annotations

import importlib
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gage import bundle as bundle_mod
from gage.bundle import atomic
from gage.carriers.recipient import Recipient, delivery_json, recipient
from gage.format.errors import (
    Exit,
    GageIOError,
    RefusedError,
    UnknownKeyError,
    UsageError,
)
from gage.format.keys import short_fingerprint
from gage.format.sanitize import visible
from gage.home.layout import Home

if TYPE_CHECKING:
    from gage.carriers.relay.creds import Creds

Route = Literal["mailbox", "a2a", "folder"]
ROUTES: tuple[Route, ...] = ("mailbox", "a2a", "folder")
EXTRAS = {"mailbox": "relay", "a2a": "a2a"}


@dataclass
class Sent:
    """One delivery: which way, to what address, on whose claim, and what the far side said."""

    id: str
    to: str
    key: bytes
    confirmed: bool
    route: Route
    target: str  # the mailbox address, the agent's URL, the folder
    claimed_by: str  # who said the contact is there (a key file, a directory, "you")
    said: str  # the far side's part of the sentence
    code: int = 0
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            **delivery_json(self.id, self.to, self.key, self.confirmed),
            "route": self.route,
            "where": {"status": "claim", "source": self.claimed_by, self.route: self.target},
            **self.detail,
        }

    def summary(self) -> str:
        who = visible(self.to, oneline=True)
        place = {"mailbox": "mailbox", "a2a": "A2A agent", "folder": "drop folder"}[self.route]
        line = f"{self.id[:12]}: delivered to {who}'s {place}"
        if self.route != "mailbox":
            line += f" {visible(self.target, oneline=True)}"
        line += f"; {self.said} (where {who} is: a claim, from {visible(self.claimed_by, oneline=True)})"
        if not self.confirmed:
            line += f"; {'sealed' if self.route == 'mailbox' else 'sent'} to a CLAIM: key {short_fingerprint(self.key)} was never confirmed by the ceremony"
        return line


def choose(who: Recipient, via: Route | None) -> Route:
    """The way to take: `via`, else the mailbox, the A2A agent, the drop folder, the first known."""
    w = who.where
    has = {
        "mailbox": w is not None and (w.mailbox is not None or w.sealing is not None),
        "a2a": w is not None and w.a2a is not None,
        "folder": w is not None and w.drop is not None,
    }
    if via is not None:
        if via not in ROUTES:
            raise UsageError(f"--via is one of {', '.join(ROUTES)}")
        if not has[via]:
            hint = "pair from a key file that carries one, or `gage pair --directory`" if via == "mailbox" else (
                f"gage contacts where {who.name} --{'a2a URL' if via == 'a2a' else 'folder DIR'}"
            )
            raise UnknownKeyError(f"no {'drop folder' if via == 'folder' else via} is known for {who.name!r}: {hint}")
        return via
    for route in ROUTES:
        if has[route]:
            return route
    raise UnknownKeyError(
        f"nowhere is known for {who.name!r}: no mailbox (pair from a key file that carries one, or `gage pair --directory`), "
        f"no A2A agent and no drop folder (gage contacts where {who.name} --a2a URL | --folder DIR)"
    )


def need_extra(route: Route) -> None:
    """The optional extra a way needs, or a usage error naming it: said before anything is kept."""
    if route in EXTRAS:
        _extra("gage.carriers.relay.deliver" if route == "mailbox" else "gage.carriers.a2a.client", route)


def _extra(module: str, route: Route) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRAS[route]
        raise UsageError(
            f"delivering by {route} needs the optional {extra} extra ({exc.name or exc} is not installed): "
            f"pip install 'gage-bundles[{extra}]' (from a checkout: pip install -e '.[{extra}]')"
        ) from None


def deliver(
    home: Home,
    bundle: Path,
    bundle_id: str,
    to: str,
    *,
    via: Route | None = None,
    unconfirmed: bool = False,
    relay: str | None = None,
    creds: Creds = None,
    token: str | None = None,
    msg_id: str | None = None,
    sent_before: bool = False,
) -> Sent:
    if via == "mailbox":
        _extra("gage.carriers.relay.deliver", "mailbox")  # the missing extra first, before anything is looked up
    who = recipient(home, to, unconfirmed=unconfirmed)
    route = choose(who, via)
    w = who.where
    assert w is not None
    claimed_by = w.source_of(route if route != "folder" else "drop")

    def sent(target: str, said: str, detail: dict[str, Any], code: int = 0) -> Sent:
        return Sent(bundle_id, to, who.key, who.confirmed, route, target, claimed_by, said, code, detail)

    if route == "mailbox":
        relay_deliver = _extra("gage.carriers.relay.deliver", "mailbox")
        done = relay_deliver.deliver(
            home, bundle, bundle_id, to, relay=relay, unconfirmed=unconfirmed, creds=creds, msg_id=msg_id, sent_before=sent_before
        )
        detail = {k: v for k, v in done.to_json().items() if k not in ("id", "to", "key", "recipient")}
        return sent(done.mailbox, "not yet fetched", detail)
    if route == "a2a":
        assert w.a2a is not None
        client = _extra("gage.carriers.a2a.client", "a2a")
        result = client.send(home, bundle, w.a2a, token=token)
        said = "the agent says it is in its pending inbox; not accepted" if result.delivered else (
            "the agent answered but did NOT confirm the delivery in gage's words"
        )
        code = 0 if result.delivered else int(Exit.A2A_UNCONFIRMED)
        return sent(w.a2a, said, {"delivered": result.delivered, "a2a": result.to_json()}, code)
    assert w.drop is not None
    home.refuse_inside(Path(w.drop), "a delivery")
    copied = to_folder(bundle, Path(w.drop))
    said = "not yet imported" if copied else "it was already there; not yet imported"
    return sent(w.drop, said, {"path": str(Path(w.drop) / bundle.name), "copied": copied})


class FolderMissing(GageIOError):
    """The drop folder is not there (a disk not mounted, a share not synced): worth trying again later."""

    retryable = True


def to_folder(bundle_dir: Path, folder: Path) -> bool:
    """Copy a held bundle into `folder/<id>` whole or not at all; False if it is there already.

    The only write gage makes outside its home, and it is atomic: a hidden temporary name
    (which `gage watch` and sync tools' partial-file rules skip), each file and folder fsynced,
    the copy checked, then renamed into place and the folder fsynced. Never over another.
    """
    if not folder.is_dir():
        raise FolderMissing("the drop folder on file is not a folder here (not mounted, moved, or never made): nothing was copied", path=str(folder))
    final = folder / bundle_dir.name
    if final.exists() or final.is_symlink():
        return False
    tmp = folder / f".{bundle_dir.name}.partial-{secrets.token_hex(6)}"
    try:
        _raw, manifest = bundle_mod.read_manifest(bundle_dir)
        bundle_mod.copy_bundle(bundle_dir, manifest, tmp)
        checked = bundle_mod.check(tmp)
        if not checked.ok:
            problem = checked.first_error()
            raise RefusedError(f"the copy did not check out ({problem}); nothing was left in the folder", path=str(folder))
        return atomic.rename_noreplace(tmp, final)
    except OSError as exc:
        raise GageIOError(f"cannot copy the bundle into the drop folder: {exc.strerror or exc}; nothing was left there", path=str(folder)) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
