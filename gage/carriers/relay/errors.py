"""The relay's own error: the relay could not be reached or did not do what was asked, and what a
permissions violation refused, in words."""

from __future__ import annotations

import re

from gage.format.errors import Exit, GageError


class RelayError(GageError):
    """The relay failed us (unreachable, no such mailbox, full, timed out, not permitted): exit 15.

    Nothing in the home changed; a delivery that failed was not delivered, and an envelope
    not yet landed stays on the relay to be fetched again.
    """

    stage = "relay"
    exit_code = Exit.RELAY


class RelayUnreachable(RelayError):
    """No node of the relay answered, or a publish failed on the way: worth trying again later,
    under the same message id (the relay's deduplication window makes a second arrival one)."""

    retryable = True


PERMISSIONS = "permissions violation"
AUTHORIZATION = "authorization violation"
REFUSED_MSG = "gage: the relay refused a permission"


def refusal_text(server_says: str) -> str:
    """What a permissions violation refused, in words (nats-py gives the server's text lower-cased)."""
    text = server_says.removeprefix("nats: ").strip()
    m = re.search(r'for (publish|subscription) to "?([^"\s]+)"?', text)
    subj = m.group(2) if m else ""
    if subj.startswith("$kv.gage_directory."):
        what = f"writing the directory record for the handle {subj.split('.', 2)[2]!r}"
    elif "gage_ob_" in subj or subj.startswith("$o."):
        what = "a mailbox's object store, which carries envelopes over 768 KiB"
    elif "gage_mb_" in subj and ("consumer" in subj or subj.startswith(("$js.ack", "$js.api"))):
        what = "reading that mailbox"
    elif subj.startswith("gage.mb."):
        what = "delivering to that mailbox"
    elif "gage_rv" in subj or subj.startswith("gage.rv."):
        what = "creating the invite stream GAGE_RV (the relay's operator makes it)" if ".create." in subj else "invite codes"
    elif "kv_gage_directory" in subj:
        what = "creating the directory (the relay's operator makes it)" if ".create." in subj else "reading the directory"
    else:
        what = "what was asked"
    return (
        f"the relay refused: this user has no permission for {what} (the relay says: {text}); "
        "its configuration decides who may do what (spec/relay.md section 8)"
    )


def refused_login(url: str, creds: object) -> str:
    """A relay that was reached and refused the login, in words, with the fix (exit 15)."""
    files: list[tuple[str, str]] = getattr(creds, "files", list)()
    given = ", ".join(f"{opt} {path}" for opt, path in files) or "no credential"
    return (
        f"the relay at {url} refused this login (it says: Authorization Violation): it was reached, and {given} is not a login "
        "its configuration knows. Check the file (--nkey FILE, --creds FILE, or --user NAME with --password-file FILE; "
        "without them, settings.toml's [relay]) or ask the relay's operator which login the people file gives you "
        "(spec/relay.md section 8.5)"
    )
