"""Every home file loaded once, and what is wrong with each: for a caller (the interface) that
must show a damaged home rather than fail on it later."""

from __future__ import annotations

from collections.abc import Callable

from gage.format.errors import GageError, GageIOError
from gage.home import authority, settings
from gage.home.contacts import Contacts
from gage.home.identity import load_identity
from gage.home.layout import Home


def check_files(home: Home) -> list[GageError]:
    """Identity, contacts, authority, settings and journal, each as an error naming the file."""
    loaders: tuple[Callable[[], object], ...] = (
        lambda: load_identity(home.identity_path),
        lambda: Contacts.load(home.contacts_path),
        lambda: authority.load(home.authority_path, None),
        lambda: settings.load(home),
        home.journal.check_readable,
    )
    problems: list[GageError] = []
    for load in loaders:
        try:
            load()
        except GageError as exc:
            problems.append(exc)
        except OSError as exc:
            problems.append(GageIOError(exc.strerror or str(exc), path=str(exc.filename or home.root)))
    return problems
