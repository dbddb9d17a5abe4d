"""Accept and reject from any screen: the dialogs around the gate, and nothing more.

The gate (gage.inbox.gate) decides whether a move is allowed and re-checks the bytes at the
moment it moves them; this module only asks the person the questions the gate needs
answered (is an unconfirmed sender all right? why reject?) and reports what happened.
An invalid bundle is refused here too, so the person is told why before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.screen import Screen

from gage.inbox import gate
from gage.trust.frame import VERDICT_MEANING
from gage.trust.verdict import Verdict
from gage.tui import background, safe
from gage.tui.dialogs import ConfirmDialog, ReasonDialog
from gage.tui.messages import BundleDecided

Done = Callable[[str], None]  # called with the new state after a successful move


def why_not_acceptable(v: Verdict) -> str | None:
    """Why this bundle can never be accepted, or None if it can."""
    if v.verdict == "invalid":
        first = f" ({v.problems[0]})" if v.problems else ""
        return f"This bundle is INVALID{first}: it was malformed, tampered with or badly signed, so it cannot be accepted."
    if v.state == "accepted":
        return "This bundle is already accepted."
    if v.state != "pending":
        return f"Only pending bundles can be accepted; this one is {v.state or 'not in your home'}."
    return None


def _who(v: Verdict) -> str:
    """What the key is to this home, from the verdict's sender alone (spec/verdict.md)."""
    s = v.sender
    if s.is_me:
        return "this home's own key"
    if s.retired is not None and s.retired.get("reason") == "compromised":
        owner = safe.one_line(str(s.retired.get("contact") or "a contact"), limit=60)
        return f"a key {owner} retired as COMPROMISED: anyone may hold it, whatever time the bundle claims"
    if s.status == "candidate":
        return "a key you have seen before but never confirmed"
    if s.status == "unknown":
        return "a key you have never seen before"
    return "a key that is not a confirmed contact's"


def unverified_body(v: Verdict) -> list[Content]:
    """What the person must know before accepting from a key nobody confirmed."""
    s = v.sender
    claim = s.claimed_name or ""
    who = _who(v)
    subject = v.manifest.subject if v.manifest and v.manifest.subject is not None else ""
    return [
        Content.styled("The sender is NOT confirmed.", "bold $warning"),
        Content(f"This bundle is signed by {who} ({s.label()})."),
        safe.trusted("It claims the name [b]\"$claim\"[/b], but anyone can claim any name.", claim=claim),
        safe.trusted("Subject (the sender's words): \"$subject\"", subject=subject),
        Content(VERDICT_MEANING["unverified"] + "."),
        Content(_advice(v)),
    ]


def _advice(v: Verdict) -> str:
    if v.sender.retired is not None:
        return (
            "This key cannot be confirmed again: p offers the new key its statement named, if any."
            " Or accept it anyway, marked unverified."
        )
    return "Confirm the key with the word-pair ceremony (p) first, or accept it anyway, marked unverified."


def accept(screen: Screen, v: Verdict, done: Done | None = None) -> None:
    """Accept `v`'s bundle: refuse invalid ones, ask about unverified ones, then call the gate."""
    app = screen.app
    if v.id is None:
        app.notify("This bundle's manifest cannot be read, so it cannot be accepted.", severity="error", markup=False)
        return
    reason = why_not_acceptable(v)
    if reason is not None:
        app.notify(safe.one_line(reason, limit=500), title="Not accepted", severity="error", markup=False)
        return
    bundle_id = v.id

    def run(unverified: bool) -> None:
        # In a worker: the gate re-checks every byte and waits for the home lock (gage.tui.background).
        def accepted(result: gate.AcceptResult) -> None:
            how = " (unverified)" if unverified else ""
            app.notify(f"Accepted {bundle_id[:12]}{how}.", title="Accepted", markup=False)
            app.post_message(BundleDecided(result.id, "accepted"))
            if done:
                done("accepted")

        def failed(message: str) -> None:
            app.notify(message, title="Not accepted", severity="error", markup=False, timeout=8)

        home = app.home  # type: ignore[attr-defined]
        background.change(app, f"accept {bundle_id[:12]}", lambda: gate.accept(home, bundle_id, unverified=unverified), accepted, failed)

    if v.verdict == "unverified":

        def answered(yes: bool | None) -> None:
            if yes:
                run(True)

        screen.app.push_screen(
            ConfirmDialog("Accept from an unconfirmed sender?", unverified_body(v), yes="Accept unverified", no="Cancel"),
            answered,
        )
        return
    run(False)


def reject(screen: Screen, v: Verdict, done: Done | None = None) -> None:
    """Reject `v`'s bundle after asking for an optional reason."""
    app = screen.app
    if v.id is None:
        app.notify("This bundle's manifest cannot be read; remove the folder by hand.", severity="error", markup=False)
        return
    if v.state != "pending":
        app.notify(f"Only pending bundles can be rejected; this one is {v.state}.", severity="warning", markup=False)
        return
    bundle_id = v.id
    subject = v.manifest.subject if v.manifest and v.manifest.subject is not None else ""

    def answered(why: str | None) -> None:
        if why is None:
            return
        def rejected(_: object) -> None:
            app.notify(f"Rejected {bundle_id[:12]}.", title="Rejected", markup=False)
            app.post_message(BundleDecided(bundle_id, "rejected"))
            if done:
                done("rejected")

        def failed(message: str) -> None:
            app.notify(message, title="Not rejected", severity="error", markup=False, timeout=8)

        home = app.home  # type: ignore[attr-defined]
        background.change(app, f"reject {bundle_id[:12]}", lambda: gate.reject(home, bundle_id, why=why or None), rejected, failed)

    body = safe.trusted("[b]$id[/b]  \"$subject\"", id=bundle_id[:12], subject=subject)
    app.push_screen(ReasonDialog(body), answered)
