"""`gage key protect` and `gage key unprotect`: seal this home's secret key, or unseal it.

The passphrase is asked on the terminal (twice for a new one) or read from a file or an
inherited descriptor (gage/cli/passphrase.py); the file is rewritten in one atomic step,
so a wrong passphrase, a mismatch or an interruption leaves identity.json as it was.
"""

from __future__ import annotations

from typing import Any

from gage.cli import passphrase
from gage.cli.output import emit_json, err, open_home
from gage.format.keys import short_fingerprint
from gage.home import unlock


def cmd_protect(args: Any) -> int:
    home = open_home(args)
    was = home.identity.protected
    if was:
        unlock.signing_identity(home)  # the current passphrase first: a wrong one stops here
    new = passphrase.new(args)
    now = unlock.protect(home, new)
    if args.json:
        emit_json({"key": now.key_text, "fingerprint": short_fingerprint(now.key), "protected": True})
    err(
        "changed the passphrase of this home's key"
        if was
        else "this home's secret key is now sealed with the passphrase; commands that sign will ask for it"
    )
    return 0


def cmd_unprotect(args: Any) -> int:
    home = open_home(args)
    now = unlock.unprotect(home)
    if args.json:
        emit_json({"key": now.key_text, "fingerprint": short_fingerprint(now.key), "protected": False})
    err("this home's secret key is no longer sealed: identity.json holds it in the clear (mode 0600)")
    return 0
