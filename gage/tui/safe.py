"""Safe text for Textual: the only way untrusted strings reach a widget.

Markup is on by default almost everywhere in Textual, and markup can carry actions
(`[@click=app.quit]`), crash the app (`[/]`) or restyle what gage draws. Rich and
Textual also let ESC through, which can retitle or clear the real terminal. So every
untrusted string goes through `gage.format.sanitize.visible` (controls shown as escapes) and
then into a `Content` built literally, never parsed as markup. Widgets in gage/tui
take `Content` from here; a test greps the package for risky calls.
"""

from __future__ import annotations

from textual.content import Content

from gage.format.sanitize import clip, visible

# Long enough for any subject or name worth reading, short enough that a hostile one
# cannot push everything else off the screen.
ONE_LINE_LIMIT = 300


def one_line(text: str | None, *, limit: int = ONE_LINE_LIMIT) -> str:
    """An untrusted value as a single visible line: newlines, tabs, ESC and bidi escaped."""
    return clip(visible(text or "", oneline=True), limit)


def lines(text: str) -> str:
    """Untrusted multi-line text (a payload preview): lines kept, every other control escaped."""
    return visible(text, oneline=False)


def literal(text: str | None, style: str = "", *, limit: int = ONE_LINE_LIMIT) -> Content:
    """A one-line untrusted value as literal Content (never markup)."""
    value = one_line(text, limit=limit)
    return Content.styled(value, style) if style else Content(value)


def literal_lines(text: str, style: str = "") -> Content:
    """Multi-line untrusted text as literal Content."""
    value = lines(text)
    return Content.styled(value, style) if style else Content(value)


def trusted(template: str, **values: str) -> Content:
    """gage's own markup template with untrusted `$values` substituted as plain text.

    Values are made visible first; `Content.from_markup` inserts them without parsing
    them as markup, so a value can neither close a tag nor open one.
    """
    return Content.from_markup(template, **{k: one_line(v) for k, v in values.items()})


def error_text(exc: BaseException) -> str:
    """An error message (which may quote a hostile file name or field) as a visible line."""
    return one_line(str(exc), limit=500)
