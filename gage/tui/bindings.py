"""Every key of the interface, in one table.

The footer, the help screen and the command palette are all generated from this
table, so they cannot disagree with what the keys actually do. Each screen asks for
its group with `bindings_for(group)`; global keys live on the app.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Key:
    key: str  # Textual key name(s), comma-separated
    action: str  # an action on the screen (or `app.` for the app)
    label: str  # short footer label
    help: str  # one sentence for the help screen and the command palette
    show: bool = True  # shown in the footer
    palette: bool = True  # offered in the command palette
    display: str | None = None  # how the help screen spells the key
    priority: bool = False  # before the focused widget's own binding for the same key


GLOBAL: tuple[Key, ...] = (
    # Not in the footer (it fits 80 columns with every bundle key); help and the palette list it.
    Key("q", "app.quit", "Quit", "Leave gage. Nothing pending is accepted by quitting.", show=False),
    Key("question_mark", "app.help", "Help", "Show every key and what the verdicts mean.", display="?"),
    Key("c", "app.contacts", "Contacts", "Your confirmed contacts and the candidate keys you have seen."),
    # Not in the footer (the inbox's is full at 80 columns); Contacts' "Me" line, help and the palette name it.
    Key("m", "app.me", "Me", "My own four word-pairs (to read to someone pairing with me) and my public key file to export.", show=False),
    Key("ctrl+p", "app.command_palette", "Commands", "Search every command by name.", show=False, palette=False),
    # Sending (gage.tui.sending); not in the footer: help and the palette (deliver, send, bundle, reply) name them.
    Key("B", "app.new_bundle", "Send: new bundle", "Make a bundle from files and send it: signed by you, delivered to a contact.", show=False, display="B"),
    Key("D", "app.deliver", "Send: deliver bundle", "Deliver (send) a bundle you made to a contact; if the way is not there it waits in the outbox.", show=False, display="D"),
    Key("R", "app.reply", "Send: reply", "Reply to the open bundle: a reply bundle to its confirmed sender, delivered to them.", show=False, display="R"),
)

INBOX: tuple[Key, ...] = (
    # priority: the table has its own (hidden) Enter binding, which would hide "Open" from the footer.
    Key("enter", "open", "Open", "Open the highlighted bundle: the frame, then its files.", priority=True),
    Key("a", "accept", "Accept", "Accept the highlighted bundle, or the marked ones: one confirmation names them, with Cancel focused."),
    Key("r", "reject", "Reject", "Reject the highlighted bundle, or the marked ones, after one confirmation with an optional reason."),
    Key("p", "pair", "Pair", "Start the word-pair ceremony with the highlighted sender, or from a key file."),
    # In the footer only where they apply (gage.tui.applies), so it fits 80 columns.
    Key("x", "export", "Export", "Export the highlighted bundle (any state, yours too) as an A2A artifact file."),
    Key("o", "folder", "Folder", "Show (and copy) the folder that holds an accepted bundle's files."),
    Key("s", "save", "Save", "Save a checked copy of the highlighted bundle's files in a folder you choose."),
    Key("S", "sort_next", "Sort", "Sort by the next column (Verdict: the worst first, Sender, Kind, Subject, then Age: the newest first). A click on a column's header sorts by it; a second click reverses.", display="S"),
    Key("slash", "filter", "Filter", "Filter the rows as you type: words of the subject, sender or kind, or an id prefix.", display="/"),
    Key("v", "verdict_filter", "Verdicts", "Show only verified, only unverified, only invalid, or only strangers' bundles (v again: the next).", show=False),
    Key("asterisk", "mark_all", "All", "Mark every row shown (the filter decides which rows); pressed again, unmark them.", show=False, display="*"),
    Key("space", "mark", "Mark", "Mark or unmark the highlighted bundle and move to the next; a and r then act on every marked one, after one confirmation.", show=False, display="Space"),
    # Not in the footer: the filter's own line says "Esc clears" while a filter or marks are on.
    Key("escape", "clear_filter", "Clear", "Clear the filter (and, pressed again, the marks).", display="Esc", show=False),
    # The table's own keys (gage.tui.table_keys), here for the help screen and when it has no focus.
    Key("j", "cursor('down')", "Down", "Move down one row (as Down).", show=False, palette=False),
    Key("k", "cursor('up')", "Up", "Move up one row (as Up).", show=False, palette=False),
    Key("g", "cursor('first')", "First", "Go to the first row (as Home).", show=False, palette=False),
    Key("G", "cursor('last')", "Last", "Go to the last row (as End).", show=False, palette=False),
    Key("1", "show('pending')", "Pending", "Show pending bundles (waiting for you).", show=False),
    Key("2", "show('accepted')", "Accepted", "Show accepted bundles.", show=False),
    Key("3", "show('rejected')", "Rejected", "Show rejected bundles.", show=False),
    Key("4", "show('outbox')", "Outbox", "Show the bundles you made (your outbox).", show=False),
)

BUNDLE: tuple[Key, ...] = (
    Key("escape", "back", "Back", "Back to the inbox.", display="Esc"),
    Key("a", "accept", "Accept", "Accept this bundle, after one confirmation (Cancel has the focus: Tab to Accept, then Enter)."),
    Key("r", "reject", "Reject", "Reject this bundle, after one confirmation with an optional reason."),
    Key("p", "pair", "Pair", "Start the word-pair ceremony with this bundle's sender key."),
    Key("x", "export", "Export", "Export this bundle as an A2A artifact file."),
    Key("o", "folder", "Folder", "Show (and copy) the folder that holds this accepted bundle's files."),
    Key("s", "save", "Save", "Save a checked copy of this bundle's files in a folder you choose."),
    Key("n", "file(1)", "Next", "Preview the next file of this bundle (one file is previewed at a time)."),
    Key("N", "file(-1)", "Prev", "Preview the previous file of this bundle."),
)

CEREMONY: tuple[Key, ...] = (
    Key("escape", "back", "Back", "Leave the ceremony; nothing is confirmed.", display="Esc"),
    Key("enter", "submit", "Compare", "Compare the eight words you typed with the key's words.", show=False, palette=False),
)

MUTUAL: tuple[Key, ...] = (
    Key("escape", "back", "Give up", "Give up the ceremony (so does typing `give up`); nothing is confirmed.", display="Esc"),
    Key("escape", "done", "Done", "Close the ceremony once their key is confirmed here and you have read the closing pair.", display="Esc"),
    Key(
        "enter",
        "submit",
        "Check",
        "Check the pair you typed against the key's words: a pair that does not match is asked again, never accepted.",
        show=False,
        palette=False,
    ),
)

# Everywhere too (the app's bindings), listed last in the help: pairing through the relay, as `gage invite` / `gage join`.
INVITE: tuple[Key, ...] = (
    Key("I", "app.invite", "Invite (pair through the relay)", "Make a one-time code to read to someone on a call; they join it, then you both read word pairs.", show=False, display="I"),
    Key("J", "app.join", "Join an invite", "Join the code someone read you (their `gage invite`), then read word pairs with them.", show=False, display="J"),
)

CONTACTS: tuple[Key, ...] = (
    Key("escape", "back", "Back", "Back to the inbox.", display="Esc"),
    Key("p", "pair", "Pair", "Pair with the highlighted candidate key."),
    Key("f", "pair_file", "Key file", "Start a pairing from a public key file."),
    Key(
        "P",
        "pair_mutual",
        "Both ways",
        "Pair both ways at once, on one call, with the highlighted candidate key (or a key file): read your pair, type theirs.",
        display="P",
    ),
    Key(
        "d,delete",
        "remove",
        "Remove",
        "Remove (unpair) the highlighted confirmed contact, or forget the highlighted candidate key.",
        display="d",
    ),
)

GROUPS: dict[str, tuple[Key, ...]] = {
    "everywhere": GLOBAL,
    "inbox": INBOX,
    "bundle": BUNDLE,
    "ceremony": CEREMONY,
    "mutual": MUTUAL,
    "contacts": CONTACTS,
    "invite": INVITE,
}


def bindings_for(group: str) -> list[Binding]:
    """Textual bindings for one screen (or the app, for "everywhere")."""
    return [
        Binding(k.key, k.action, k.label, show=k.show, key_display=k.display, priority=k.priority, tooltip=k.help)
        for k in GROUPS[group]
    ]


def key_name(k: Key) -> str:
    """How a person types the key, for the help screen."""
    if k.display:
        return k.display
    first = k.key.split(",")[0]
    return {"enter": "Enter", "ctrl+p": "Ctrl+P"}.get(first, first)


def palette_entries(group: str) -> list[Key]:
    """The commands the palette offers for a screen of this group."""
    return [k for k in GROUPS.get(group, ()) if k.palette]
