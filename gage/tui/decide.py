"""Accept and reject from any screen: the dialogs around the gate, and nothing more.

The gate (gage.inbox.gate) decides whether a move is allowed and re-checks the bytes at the
moment it moves them; this module only asks the person the questions the gate needs
answered (is an unconfirmed sender all right? why reject?) and reports what happened.
An invalid bundle is refused here too, so the person is told why before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import Screen

from gage.trust.frame import VERDICT_MEANING
from gage.trust.verdict import Verdict
from gage.tui import background, bulk, safe
from gage.tui.gate_dialog import GateAnswer, GateDialog, bundle_line
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
    """Accept `v`'s bundle: refuse invalid ones, then one deliberate confirmation (Cancel
    focused, no letter key: gage.tui.gate_dialog), then the gate."""
    app = screen.app
    if v.id is None:
        app.notify("This bundle's manifest cannot be read, so it cannot be accepted.", severity="error", markup=False)
        return
    reason = why_not_acceptable(v)
    if reason is not None:
        app.notify(safe.one_line(reason, limit=500), title="Not accepted", severity="error", markup=False)
        return
    unverified = v.verdict == "unverified"

    def answered(answer: GateAnswer | None) -> None:
        if answer is not None:
            _accept_all(screen, [v], done)

    if unverified:
        title, act, notes = "Accept from an unconfirmed sender?", "Accept unverified", unverified_body(v)
    else:
        title, act = "Accept this bundle?", "Accept"
        notes = [Content(VERDICT_MEANING["verified"] + ". Accepting moves it out of pending; there is no undo.")]
    app.push_screen(GateDialog(title, [v], act=act, notes=notes), answered)


def accept_many(screen: Screen, verdicts: list[Verdict], done: Done | None = None) -> None:
    """Accept several marked bundles in one confirmed act; the dialog lists every one.

    Bundles that cannot be accepted (invalid, no longer pending) are named and left out;
    those from unconfirmed senders are counted in the dialog and accepted marked unverified.
    """
    app = screen.app
    ok = [v for v in verdicts if v.id is not None and why_not_acceptable(v) is None]
    left_out = [v for v in verdicts if v not in ok]
    if not ok:
        app.notify("None of the marked bundles can be accepted (invalid, or not pending).", title="Not accepted", severity="error", markup=False)
        return
    notes: list[Content] = []
    strangers = sum(1 for v in ok if v.verdict == "unverified")
    if strangers:
        notes.append(
            Content.styled(
                f"{strangers} of them {'is' if strangers == 1 else 'are'} from a sender you have NOT confirmed:"
                " accepted marked unverified.",
                "bold $warning",
            )
        )
    for v in left_out:
        notes.append(Content.assemble(Content.styled("left out: ", "bold"), bundle_line(v)))
    notes.append(Content("Accepting moves them out of pending; there is no undo."))

    def answered(answer: GateAnswer | None) -> None:
        if answer is not None:
            _accept_all(screen, ok, done)

    n = len(ok)
    app.push_screen(GateDialog(f"Accept these {n} bundles?" if n > 1 else "Accept this bundle?", ok, act=f"Accept {n}", notes=notes), answered)


def _accept_all(screen: Screen, verdicts: list[Verdict], done: Done | None) -> None:
    """In a worker: the gate re-checks every byte and waits for the home lock (gage.tui.background)."""
    app = screen.app
    home = app.home  # type: ignore[attr-defined]
    wanted = [(str(v.id), v.verdict == "unverified") for v in verdicts]

    bar = _bar(screen, "Accepting", [bundle_id for bundle_id, _ in wanted])
    step = bar.progress.step if bar is not None else bulk.Progress(len(wanted)).step

    def work() -> tuple[list[tuple[str, bool]], list[str]]:
        return bulk.accept_each(home, wanted, step)  # the gate, per bundle (gage.tui.bulk)

    def finished(result: tuple[list[tuple[str, bool]], list[str]]) -> None:
        moved, failures = result
        if bar is not None:
            bar.stop()
        for bundle_id, _unverified in moved:
            app.post_message(BundleDecided(bundle_id, "accepted"))
        if len(moved) == 1:
            how = " (unverified)" if moved[0][1] else ""
            app.notify(f"Accepted {moved[0][0][:12]}{how}.", title="Accepted", markup=False)
        elif moved:
            app.notify(f"Accepted {len(moved)} bundles.", title="Accepted", markup=False)
        if failures:
            app.notify("; ".join(failures), title="Not accepted", severity="error", markup=False, timeout=8)
        if moved and done:
            done("accepted")

    def failed(message: str) -> None:
        if bar is not None:
            bar.stop()
        app.notify(message, title="Not accepted", severity="error", markup=False, timeout=8)

    label = wanted[0][0][:12] if len(wanted) == 1 else f"{len(wanted)} bundles"
    background.change(app, f"accept {label}", work, finished, failed)


def _bar(screen: Screen, doing: str, ids: list[str]) -> bulk.BulkBar | None:
    """The screen's progress bar, started, for a decision on several bundles (None for one)."""
    if len(ids) < 2:
        return None
    try:
        bar = screen.query_one(bulk.BulkBar)
    except NoMatches:
        return None
    bar.start(f"{doing} {len(ids)} bundles", ids)
    return bar


def reject(screen: Screen, v: Verdict, done: Done | None = None) -> None:
    """Reject `v`'s bundle: one deliberate confirmation with an optional reason."""
    app = screen.app
    if v.id is None:
        app.notify("This bundle's manifest cannot be read; remove the folder by hand.", severity="error", markup=False)
        return
    if v.state != "pending":
        app.notify(f"Only pending bundles can be rejected; this one is {v.state}.", severity="warning", markup=False)
        return
    reject_many(screen, [v], done)


def reject_many(screen: Screen, verdicts: list[Verdict], done: Done | None = None) -> None:
    """Reject one or several pending bundles in one confirmed act, with one optional reason."""
    app = screen.app
    ok = [v for v in verdicts if v.id is not None and v.state == "pending"]
    if not ok:
        app.notify("None of the marked bundles is pending, so none can be rejected.", severity="warning", markup=False)
        return
    left_out = [Content.assemble(Content.styled("left out: ", "bold"), bundle_line(v)) for v in verdicts if v not in ok]
    n = len(ok)
    ids = [str(v.id) for v in ok]
    home = app.home  # type: ignore[attr-defined]

    def answered(answer: GateAnswer | None) -> None:
        if answer is None:
            return
        why = answer.why or None
        bar = _bar(screen, "Rejecting", ids)
        step = bar.progress.step if bar is not None else bulk.Progress(n).step

        def work() -> tuple[list[str], list[str]]:
            return bulk.reject_each(home, ids, why, step)  # the gate, per bundle (gage.tui.bulk)

        def finished(result: tuple[list[str], list[str]]) -> None:
            moved, failures = result
            if bar is not None:
                bar.stop()
            for bundle_id in moved:
                app.post_message(BundleDecided(bundle_id, "rejected"))
            if moved:
                what = moved[0][:12] if len(moved) == 1 else f"{len(moved)} bundles"
                app.notify(f"Rejected {what}.", title="Rejected", markup=False)
            if failures:
                app.notify("; ".join(failures), title="Not rejected", severity="error", markup=False, timeout=8)
            if moved and done:
                done("rejected")

        def failed(message: str) -> None:
            if bar is not None:
                bar.stop()
            app.notify(message, title="Not rejected", severity="error", markup=False, timeout=8)

        label = ids[0][:12] if n == 1 else f"{n} bundles"
        background.change(app, f"reject {label}", work, finished, failed)

    title = "Reject this bundle?" if n == 1 else f"Reject these {n} bundles?"
    app.push_screen(GateDialog(title, ok, act="Reject" if n == 1 else f"Reject {n}", notes=left_out, reason=True), answered)
