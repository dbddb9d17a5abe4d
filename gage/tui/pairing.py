"""Starting the word-pair ceremony: from a bundle's sender (`p`), a key file (`f`), or a candidate.

Every start goes through the pairing dialog (gage.tui.pair_name), which asks the local
name and checks it for a clash before any word is shown, and offers the one-way or the
mutual ceremony (gage.tui.ceremony, gage.tui.mutual).

What a bundle's key is comes from the verdict's sender (gage.trust.verdict), never from a
lookup of its own: a forged bundle proves nothing about its key, my own key is not a
contact, and a key retired by its owner's statement (spec/keys.md) can never be
confirmed again, so `p` on it offers the new key the statement named, or says why not.
Remembering a key as a candidate takes the home lock, so it runs off the UI thread
(gage.tui.background).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App
from textual.content import Content

from gage.format.errors import GageError
from gage.format.keys import parse_key, short_fingerprint
from gage.format.keys.file import KeyFile
from gage.home.contacts import Contacts
from gage.home.identity import load_key_file
from gage.trust.ceremony import add_candidate
from gage.trust.keytrust import key_trust
from gage.trust.verdict import Verdict
from gage.tui import background, safe
from gage.tui.ceremony import CeremonyScreen
from gage.tui.dialogs import ConfirmDialog, KeyFileDialog
from gage.tui.mutual import MutualScreen
from gage.tui.pair_name import PairChoice, PairNameDialog


def _say(app: App[Any], text: str, *, severity: str = "information", timeout: float = 8) -> None:
    app.notify(text, severity=severity, markup=False, timeout=timeout)  # type: ignore[arg-type]


def start_ceremony(app: App[Any], key: bytes, claimed_name: str, source: str, *, mutual: bool = False, route: Any = None) -> None:
    """Open the ceremony on `key`, unless it is mine, already confirmed, or retired: the
    pairing dialog first (the name, checked; one way or both), then the ceremony chosen.

    `route`: where the source says the key is (a key file's mailbox: a whereabouts claim for
    that key), kept only once the ceremony confirmed it; a pairing left or refused writes
    nothing to where.json (spec/relay.md section 2)."""
    home = app.home  # type: ignore[attr-defined]
    try:
        trust = key_trust(home, Contacts.load(home.contacts_path), key)
    except GageError as exc:
        _say(app, safe.error_text(exc), severity="error")
        return
    if trust.mine:
        _say(app, "That is your own key.", severity="warning")
        return
    if trust.trusted:
        _say(app, f"This key is already confirmed as {safe.one_line(trust.name or '')}.")
        return
    if trust.retired is not None and trust.retired.get("contact") is not None:
        r = trust.retired
        replacement = parse_key(r["replacement"]) if isinstance(r.get("replacement"), str) else None
        _say(app, _cannot_pair(safe.one_line(str(r["contact"])), key, str(r["reason"]), replacement), severity="warning", timeout=12)
        return

    def chosen(choice: PairChoice | None) -> None:
        if choice is None:
            return
        screen = MutualScreen if choice.mutual else CeremonyScreen

        def ended(confirmed: bool | None) -> None:
            if confirmed and route is not None:
                from gage.home import whereabouts

                background.change(app, "where", lambda: whereabouts.remember(home, route), lambda _w: None,
                                  lambda message: _say(app, message, severity="error"), small=True)

        app.push_screen(screen(key, claimed_name, source, choice.name), ended)

    app.push_screen(PairNameDialog(key, claimed_name, source, mutual=mutual), chosen)


def _cannot_pair(owner: str, key: bytes, reason: str, replacement: bytes | None) -> str:
    out = (
        f"The key {short_fingerprint(key)} is {owner}'s, retired as {reason} by their own statement:"
        " a retired key cannot be confirmed again."
    )
    if replacement is None:
        return out + f" The statement named no new key: pair with {owner}'s new key from their key file (f in Contacts), on a call."
    return out + f" It named the new key {short_fingerprint(replacement)}: p on one of their bundles, or its row in Contacts, pairs with that."


def pair_with_sender(app: App[Any], v: Verdict | None) -> None:
    """`p`: pair with an unconfirmed sender's key, or ask for a key file."""
    if v is None or v.sender.key is None:
        pair_from_file(app)
        return
    s = v.sender
    key = s.key
    assert key is not None
    if s.is_me:
        _say(app, "This bundle is signed with your own key: there is nobody to pair with.", severity="warning")
        return
    if v.verdict == "invalid" or not s.signature_ok:
        # Before any word about the key: a forged bundle can name any key, a contact's too.
        _say(app, "This bundle is invalid: its key proves nothing, so gage will not pair from it.", severity="error")
        return
    if s.retired is not None:
        offer_replacement(app, v)
        return
    if s.status == "confirmed":
        _say(app, f"{safe.one_line(s.name)} is already a confirmed contact.")
        return
    source = f"bundle {v.id[:12] if v.id else '?'}"
    claimed = s.claimed_name or ""
    home = app.home  # type: ignore[attr-defined]

    def failed(message: str) -> None:
        _say(app, message, severity="error")

    background.change(
        app,
        "remember key",
        lambda: add_candidate(home, key, claimed, source),
        lambda _: start_ceremony(app, key, claimed, source),
        failed,
        small=True,
    )


def offer_replacement(app: App[Any], v: Verdict) -> None:
    """`p` on a retired key: offer the ceremony on the key its statement named, or say why not."""
    s = v.sender
    r = s.retired or {}
    key = s.key
    assert key is not None
    owner = safe.one_line(str(r.get("contact") or "its owner"), limit=60)
    reason = str(r.get("reason"))
    text = r.get("replacement")
    new = parse_key(text) if isinstance(text, str) else None
    if new is None:
        _say(app, _cannot_pair(owner, key, reason, None), severity="warning", timeout=12)
        return
    try:
        known = key_trust(app.home, Contacts.load(app.home.contacts_path), new)  # type: ignore[attr-defined]
    except GageError as exc:
        _say(app, safe.error_text(exc), severity="error")
        return
    if known.trusted:
        _say(app, f"{owner}'s new key {short_fingerprint(new)} is already confirmed, as {safe.one_line(known.name or '')}.")
        return
    body = [
        Content(f"The key {short_fingerprint(key)} that signed this bundle is {owner}'s, retired as {reason} by their own statement."),
        Content("A retired key cannot be confirmed again."),
        Content(
            f"The statement named a new key, {short_fingerprint(new)}. Pair with that one now? Nothing is trusted"
            " until the words they read you match."
        ),
    ]

    def answered(yes: bool | None) -> None:
        if yes:
            start_ceremony(app, new, str(r.get("contact") or ""), f"named as the new key by the retired key {short_fingerprint(key)}")

    app.push_screen(ConfirmDialog("Pair with their new key?", body, yes="Pair with the new key", no="Cancel", danger=False), answered)


def pair_from_file(app: App[Any], *, mutual: bool = False) -> None:
    """`f`: ask for a key file; read it and remember its key off the UI thread, then the ceremony."""
    home = app.home  # type: ignore[attr-defined]

    def chosen(path: Path | None) -> None:
        if path is None:
            return

        def load() -> tuple[KeyFile, str, Any]:
            kf = load_key_file(path)
            source = f"key file \"{path.name}\""
            add_candidate(home, kf.key, kf.name, source)
            route = None
            if kf.sealing is not None:
                from gage.home import sealing, whereabouts

                # Only the key file's own key's route; kept after the ceremony, never before.
                route = whereabouts.claim_of(kf.key, sealing.parse_carried(kf.sealing), relay=None, source=f"key file {path.name}")
            return kf, source, route

        def loaded(result: tuple[KeyFile, str, Any]) -> None:
            kf, source, route = result
            start_ceremony(app, kf.key, kf.name, source, mutual=mutual, route=route)

        def failed(message: str) -> None:
            # A missing file is not "not a key file": say which it is.
            title = "Not a key file" if path.exists() else "No such file"
            app.notify(message, title=title, severity="error", markup=False, timeout=8)

        background.change(app, "key file", load, loaded, failed, small=True)

    app.push_screen(KeyFileDialog(), chosen)
