"""Export a bundle as an A2A artifact file, from the interface.

Any bundle this home holds can be exported: one that arrived (in any state) or one
you made (the outbox). The work runs in a thread worker, because a bundle may be as
large as the home's A2A limit and is read, hashed, base64-encoded and written whole;
the UI thread only asks where to write and reports what happened. The artifact comes
from `gage.carriers.a2a.artifact.export_artifact`, which refuses a bundle that does not verify,
so nothing damaged leaves looking like the transport's fault.

A file already at the chosen path is never replaced: the finished file is written
under a temporary name and then linked to its name, which fails if something is there,
even if it appeared after the person chose the name.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from functools import partial
from pathlib import Path

from textual.app import App
from textual.screen import Screen

from gage.bundle import atomic
from gage.carriers.a2a import artifact
from gage.format.errors import GageError, GageIOError, NotFoundError, RefusedError
from gage.home import listing
from gage.home.layout import Home
from gage.tui import safe
from gage.tui.dialogs import ExportChoice, ExportDialog
from gage.tui.messages import ArtifactExported

EXPORT_GROUP = "export"
# Where a hard link cannot be made (FAT, some network shares): fall back to a checked rename.
NO_LINK = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS}


def _exists_error(dest: Path) -> RefusedError:
    return RefusedError("already exists; gage will not replace it (choose another name)", path=str(dest))


def write_new(dest: Path, data: bytes) -> None:
    """Write `data` to `dest` whole (crash-safe, via gage.bundle.atomic), never over an existing file."""
    if dest.exists() or dest.is_symlink():
        raise _exists_error(dest)
    if not dest.parent.is_dir():
        raise GageIOError("the folder does not exist; nothing was written", path=str(dest.parent))
    tmp = atomic.tmp_name(dest)
    try:
        atomic.write_bytes(tmp, data, 0o644)
    except GageIOError as exc:
        raise GageIOError(exc.message, path=str(dest)) from exc  # name the file asked for, not the temporary
    try:
        try:
            os.link(tmp, dest)
        except FileExistsError:
            raise _exists_error(dest) from None
        except OSError as exc:
            if exc.errno not in NO_LINK:
                raise GageIOError(f"cannot write: {exc.strerror or exc}", path=str(dest)) from exc
            if dest.exists() or dest.is_symlink():
                raise _exists_error(dest) from None
            try:
                os.rename(tmp, dest)
            except OSError as exc2:
                raise GageIOError(f"cannot write: {exc2.strerror or exc2}", path=str(dest)) from exc2
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    atomic.fsync_dir(dest.parent)


def artifact_bytes(home: Home, bundle_id: str, protocol: str) -> bytes:
    """The bundle as A2A Artifact JSON text, as `gage a2a export` writes it."""
    stored = listing.find(home, bundle_id)
    if stored is None:
        raise NotFoundError("is no longer in this home (moved or removed); nothing was written", path=f"bundle {bundle_id[:12]}")
    obj = artifact.export_artifact(stored.path, protocol=protocol, limits=artifact.Limits.of(home))
    return (json.dumps(obj, indent=2, ensure_ascii=True) + "\n").encode("ascii")


def export_to_file(home: Home, bundle_id: str, choice: ExportChoice) -> None:
    """Write one bundle to `choice.path`. Raises GageError (or OSError) saying why not."""
    if choice.path.exists() or choice.path.is_symlink():
        raise _exists_error(choice.path)  # before the expensive part
    write_new(choice.path, artifact_bytes(home, bundle_id, choice.protocol))


def _run(app: App, home: Home, bundle_id: str, choice: ExportChoice) -> None:
    """In a thread worker: export, then tell the app what happened. No widget is touched here."""
    error: str | None = None
    try:
        export_to_file(home, bundle_id, choice)
    except (GageError, OSError) as exc:
        error = safe.error_text(exc)
    except Exception as exc:  # noqa: BLE001 - a failed export is reported; it must never end the interface
        error = safe.error_text(exc) or type(exc).__name__
    app.post_message(ArtifactExported(bundle_id, str(choice.path), choice.protocol, error))


def start(screen: Screen, bundle_id: str | None) -> None:
    """`x`: ask where to write the bundle, then export it off the UI thread."""
    app = screen.app
    if bundle_id is None:
        app.notify("Nothing to export here.", severity="warning", markup=False)
        return
    home: Home = app.home  # type: ignore[attr-defined]

    def chosen(choice: ExportChoice | None) -> None:
        if choice is None:
            return
        app.notify(f"Exporting {bundle_id[:12]} (A2A {choice.protocol})…", markup=False, timeout=3)
        app.run_worker(
            partial(_run, app, home, bundle_id, choice),
            thread=True,
            group=EXPORT_GROUP,
            name=f"export {bundle_id[:12]}",
            exit_on_error=False,
        )

    try:
        cwd = Path.cwd()
    except OSError:  # the working directory was removed under us
        cwd = Path.home()
    app.push_screen(ExportDialog(bundle_id, cwd), chosen)


def report(app: App, message: ArtifactExported) -> None:
    """Say how the export went; the path and any error are shown literally (plain text, controls escaped)."""
    if message.error is not None:
        app.notify(message.error, title="Not exported", severity="error", markup=False, timeout=10)
        return
    where = safe.one_line(message.path, limit=400)
    app.notify(
        f"Wrote {message.bundle_id[:12]} as an A2A {message.protocol} artifact: {where}", title="Exported", markup=False, timeout=8
    )
