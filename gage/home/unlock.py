"""The one way to this home's secret key: every signing path asks `signing_identity`.

A protected identity (spec/keys.md section 11) loads with its public half only, so listing,
verdicts and the interface never need the passphrase; signing a bundle, a key statement or
a countersignature does, and comes here. Where the passphrase comes from is the caller's:
the command line asks on the terminal or reads `--passphrase-file` / `--passphrase-fd`
(gage/cli/passphrase.py); the interface sets its own asker (a dialog) on the home. The
passphrase is never taken from an argument or an environment variable's value, which a
process listing or /proc/PID/environ shows to other users.

Once unlocked, the identity is kept on the Home object for the rest of the process, so a
command that signs twice (a retirement and its statement bundle) asks once.
"""

from __future__ import annotations

from collections.abc import Callable

from gage.format.errors import PassphraseError
from gage.format.keys import Identity
from gage.home import sealing
from gage.home.identity import load_identity, rewrite_identity
from gage.home.layout import Home

# Asked with a prompt naming what is being unlocked; returns the passphrase's bytes.
Asker = Callable[[str], bytes]

NO_ASKER = (
    "this home's key is passphrase-protected and there is no terminal to ask on: give --passphrase-file FILE "
    "or --passphrase-fd N"
)


def set_asker(home: Home, asker: Asker | None) -> None:
    """Say how this home asks for its passphrase (the interface's dialog, the CLI's terminal)."""
    home.passphrase_asker = asker


def _same(a: Identity, b: Identity) -> bool:
    """The same key with the same retirements (a seal hides retired secrets, so not `==`)."""
    return a.key == b.key and [(r.key, r.reason, r.retired_at) for r in a.retired] == [
        (r.key, r.reason, r.retired_at) for r in b.retired
    ]


def prompt_for(identity: Identity) -> str:
    return f"passphrase for {identity.name}'s key {identity.key_text[:8 + 16]}...: "


def signing_identity(home: Home, identity: Identity | None = None) -> Identity:
    """This home's identity with its secret: `identity` (default: the home's, as loaded), unlocked.

    Callers that hold the home lock pass the identity they read under it, so the key that
    signs is the one on disk now. A wrong passphrase is PassphraseError and changes nothing.
    """
    ident = identity if identity is not None else home.identity
    if not ident.locked:
        return ident
    cached = home._unlocked
    if cached is not None and _same(cached, ident):
        return cached
    if home.passphrase_asker is None:
        raise PassphraseError(NO_ASKER)
    unlocked = ident.unlock(home.passphrase_asker(prompt_for(ident)))
    home._unlocked = unlocked
    return unlocked


def remember(home: Home, identity: Identity) -> None:
    """After a rewrite under the lock: the identity now on disk, unlocked as it was written."""
    home._identity = identity
    home._unlocked = identity if identity.protected and not identity.locked else None


def protect(home: Home, new_passphrase: bytes) -> Identity:
    """Seal this home's secret key with `new_passphrase` (or change the passphrase of a sealed one).

    The current passphrase, if there is one, is asked first; the file is rewritten in one
    atomic step under the home lock, so an interrupted or failed change leaves the old file.
    """
    with home.lock():
        me = signing_identity(home, load_identity(home.identity_path))
        now = me.protect(new_passphrase)
        rewrite_identity(now, home.identity_path)
        remember(home, now)
        sealing.protect_file(home.root, now)  # the mailbox's secret is sealed with the identity too
    return now


def unprotect(home: Home) -> Identity:
    """Write this home's secret key in the clear again (after asking for the passphrase)."""
    with home.lock():
        me = load_identity(home.identity_path)
        if not me.protected:
            from gage.format.errors import RefusedError

            raise RefusedError("this home's key is not passphrase-protected")
        now = signing_identity(home, me).unprotected()
        rewrite_identity(now, home.identity_path)
        remember(home, now)
        sealing.protect_file(home.root, now)
    return now


def sealing_key(home: Home, *, opened: bool) -> sealing.SealingKey | None:
    """This home's sealing key (bound by its current key or one it retired: spec/keys.md section 6).

    `opened`: with its secret, to open envelopes; on a protected home that asks for the
    passphrase (as signing does), once per process. Without, only the address and binding."""
    key = sealing.load(home.root, home.identity.key, owned=home.identity.owns)
    if key is None or not opened:
        return key
    if key.binding.signing_key != home.identity.key and home.identity.current_retirement is None:
        # Still bound by a key this home retired (a rotation cut short): bound again, the same key,
        # by the current one, so everything that reads it by the current key finds it.
        me = signing_identity(home)
        with home.lock():
            return sealing.ensure(home.root, me)
    if key.opened is not None:
        return key
    return sealing.unlock(home.root, signing_identity(home))
