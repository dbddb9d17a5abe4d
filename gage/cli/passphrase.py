"""Where the command line gets a passphrase: the terminal, a file, or an inherited descriptor.

Never an argument or an environment variable's value: both are visible to other users of
the machine (`ps`, /proc/PID/cmdline and environ). A file or a descriptor is what an agent
uses (`--passphrase-fd 3 3<secret`, or a pipe its parent keeps), as gpg's
`--passphrase-fd` and age's plugins do. The passphrase is the first line, without its line
ending; it is read only when a command actually signs (gage/home/unlock.py asks).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Callable

from gage.format.errors import GageIOError, PassphraseError, UsageError

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, the start path)
if TYPE_CHECKING:
    from typing import Any

# gage.format.keys.seal.MAX_PASSPHRASE, copied: the parser imports this module, and keyseal loads
# libsodium's password hashing (tests/test_cli_passphrase.py checks the two agree).
MAX_PASSPHRASE = 1024
# A new passphrase shorter than this gets a warning and a second, deliberate prompt.
SHORT = 8


def err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def add_options(p: argparse.ArgumentParser, *, new: bool = False) -> None:
    """The options of a command that signs (`new`: also those of one that sets a passphrase)."""
    g = p.add_argument_group("passphrase (for a protected key; default: asked on the terminal)")
    g.add_argument("--passphrase-file", metavar="FILE", help="read the passphrase from the first line of FILE")
    g.add_argument("--passphrase-fd", metavar="N", type=_fd, help="read the passphrase from the open file descriptor N")
    if new:
        g.add_argument("--new-passphrase-file", metavar="FILE", help="read the new passphrase from the first line of FILE")
        g.add_argument("--new-passphrase-fd", metavar="N", type=_fd, help="read the new passphrase from descriptor N")


def _fd(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a file descriptor number") from None
    if n < 0:
        raise argparse.ArgumentTypeError("a file descriptor is a number from 0 up")
    return n


def _first_line(data: bytes, where: str) -> bytes:
    if len(data) > MAX_PASSPHRASE + 2 and b"\n" not in data[: MAX_PASSPHRASE + 2]:
        raise PassphraseError(f"{where}: the passphrase is longer than {MAX_PASSPHRASE} bytes")
    line = data.split(b"\n", 1)[0].removesuffix(b"\r")
    if not line:
        raise PassphraseError(f"{where}: the first line is empty; it must hold the passphrase")
    return line


def from_file(path: str) -> bytes:
    """The first line of a file, or of a pipe (a FIFO an agent writes into).

    A regular file others may read (or write) is refused, as ssh refuses such a key file: the
    passphrase would be theirs too. A pipe is read as it is written, for at most PIPE_WAIT
    seconds: a writer that holds it open and writes nothing, or no writer at all (opening the
    read end does not wait for one), is an error, not a hang."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            st = os.fstat(fd)
            mode = st.st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
                raise UsageError("a passphrase file must be a file or a pipe", path=path)
            if stat.S_ISREG(mode) and mode & 0o077:
                raise PassphraseError(
                    f"{path}: permissions {stat.S_IMODE(mode):04o} are too open: others on this machine can read the"
                    f" passphrase. gage will not use it; make it yours alone: chmod 600 {path}"
                )
            data = _read_pipe(fd, path) if stat.S_ISFIFO(mode) else _read_some(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise GageIOError(f"cannot read the passphrase file: {exc.strerror}", path=path) from exc
    return _first_line(data, path)


# How long a pipe may stay silent before gage gives up on it (seconds).
PIPE_WAIT = 30.0


def _read_some(fd: int) -> bytes:
    """A file's (or a terminal device's) first bytes, enough for the longest passphrase."""
    os.set_blocking(fd, True)
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_PASSPHRASE + 2:
        chunk = os.read(fd, MAX_PASSPHRASE + 3 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _read_pipe(fd: int, path: str) -> bytes:
    """A pipe's bytes up to its first newline or its end, waiting at most PIPE_WAIT for them."""
    import select
    import time

    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + PIPE_WAIT
    while size <= MAX_PASSPHRASE + 2:
        left = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            raise PassphraseError(
                f"{path}: no passphrase came through this pipe in {PIPE_WAIT:g} s (no writer opened it, or its writer"
                " holds it open without writing a line); nothing was signed"
            )
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk:
            break
    return b"".join(chunks)


def from_fd(n: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= MAX_PASSPHRASE + 2:
            chunk = os.read(n, 4096)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if b"\n" in chunk:
                break
    except OSError as exc:
        raise GageIOError(f"cannot read the passphrase from descriptor {n}: {exc.strerror}") from exc
    return _first_line(b"".join(chunks), f"descriptor {n}")


def from_terminal(prompt: str, *, twice: bool = False) -> bytes:
    """Ask on the controlling terminal, echo off (getpass reads /dev/tty, not standard input)."""
    import getpass

    if not _have_terminal():
        raise PassphraseError(
            "this needs a passphrase and there is no terminal to ask on: give --passphrase-file FILE or --passphrase-fd N"
        )
    try:
        while True:
            first = getpass.getpass(prompt).encode("utf-8")
            if not twice:
                break
            again_prompt = "the same passphrase again: "
            if first and len(first.decode("utf-8")) < SHORT:
                # A new passphrase this short is guessed quickly by anyone who copies the sealed file
                # (Argon2id slows each guess, it cannot make few guesses many): say so, and let them choose.
                err(
                    f"gage: warning: that passphrase is {len(first.decode('utf-8'))} characters; one of {SHORT} or more"
                    " (a few words) is far harder to guess from a copied identity file"
                )
                again_prompt = "type it again to use it anyway, or press Enter to choose a longer one: "
            again = getpass.getpass(again_prompt).encode("utf-8")
            if not again and again_prompt != "the same passphrase again: ":
                continue  # Enter: choose another
            if again != first:
                raise PassphraseError("the two passphrases differ; nothing was changed")
            break
    except EOFError:
        raise PassphraseError("no passphrase was typed") from None
    if not first:
        raise PassphraseError("the passphrase is empty")
    return first


def _have_terminal() -> bool:
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return sys.stdin.isatty()
    os.close(fd)
    return True


def current(args: Any, prompt: str) -> bytes:
    """The passphrase of the key as it is, from the options `args` carries or the terminal."""
    file = getattr(args, "passphrase_file", None)
    fd = getattr(args, "passphrase_fd", None)
    if file is not None and fd is not None:
        raise UsageError("give --passphrase-file or --passphrase-fd, not both")
    if file is not None:
        return from_file(file)
    if fd is not None:
        return from_fd(fd)
    return from_terminal(prompt)


def new(args: Any, *, names: tuple[str, str] = ("new_passphrase_file", "new_passphrase_fd")) -> bytes:
    """A passphrase to set: from the options named, or typed twice on the terminal."""
    file, fd = (getattr(args, n, None) for n in names)
    if file is not None and fd is not None:
        raise UsageError("give one source for the new passphrase, not two")
    if file is not None:
        given = from_file(file)
    elif fd is not None:
        given = from_fd(fd)
    else:
        return from_terminal("new passphrase: ", twice=True)
    if len(given.decode("utf-8", "replace")) < SHORT:  # no one to ask again: a warning only
        err(f"gage: warning: the new passphrase is shorter than {SHORT} characters; a longer one is far harder to guess")
    return given


def asker(args: Any) -> Callable[[str], bytes]:
    """The home's asker (gage/home/unlock.py) for this command's options: read only when asked."""
    return lambda prompt: current(args, prompt)
