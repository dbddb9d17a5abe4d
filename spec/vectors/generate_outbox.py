"""Generate spec/vectors/outbox.json: delivery files a reader must take, and those it must refuse (and by which field).

Made here from the rules in spec/relay.md section 11 (the file), never with gage's code, so the
vectors check that code rather than copy it. Deterministic: no randomness, no clock.

    python spec/vectors/generate_outbox.py          # rewrite outbox.json
    python spec/vectors/generate_outbox.py --check  # exit 1 if the file is out of date
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "outbox.json"
ID = "0123456789abcdef"

VALID: dict[str, Any] = {
    "version": 1,
    "id": ID,
    "bundle": "ab" * 32,
    "to": "bob",
    "key": "ed25519:" + "00" * 32,
    "route": "mailbox",
    "via": None,
    "msg_id": "cd" * 16,
    "queued_at": "2026-12-07T10:00:00.000000Z",
    "state": "queued",
    "unconfirmed": False,
    "relay": None,
    "creds": {},
    "token_file": None,
    "tries": 2,
    "last_try": "2026-12-07T10:00:05.250000Z",
    "last_error": "cannot reach the relay at nats://127.0.0.1:4222: nothing was delivered",
    "next_try": "2026-12-07T10:00:10.250000Z",
    "attempt": None,
    "done_at": None,
    "ack": None,
    "why": None,
}


def changed(**fields: Any) -> dict[str, Any]:
    doc = dict(VALID)
    for k, v in fields.items():
        if v is ...:
            doc.pop(k)
        else:
            doc[k] = v
    return doc


# Each case: a delivery file's JSON (in a folder named by `ID`), and either "ok" or the field refused
# (null: the document as a whole).
CASES: list[tuple[str, dict[str, Any], str | None | bool]] = [
    ("queued", VALID, True),
    ("delivered-by-the-relay", changed(state="delivered", done_at="2026-12-07T10:01:00.000000Z", ack={"ack": "relay", "duplicate": False}), True),
    ("cancelled-by-the-person", changed(state="cancelled", why="cancelled by the person", done_at="2026-12-07T10:01:00.000000Z"), True),
    ("a-try-under-way", changed(state="sending", attempt="2026-12-07T10:00:10.300000Z"), True),
    ("to-a-folder-asked-for", changed(route="folder", via="folder"), True),
    ("with-credential-paths", changed(creds={"creds": "/home/alice/alice.creds", "nkey": None, "user": None, "password_file": None}), True),
    ("version-2", changed(version=2), None),
    ("no-version", changed(version=...), None),
    ("not-an-object", [VALID], None),  # type: ignore[list-item]
    ("unknown-field", changed(password="hunter2"), None),
    ("unknown-state", changed(state="lost"), "state"),
    ("unknown-way", changed(route="carrier-pigeon"), "route"),
    ("unknown-way-asked", changed(via="email"), "route"),
    ("no-bundle", changed(bundle=...), "bundle"),
    ("empty-name", changed(to=""), "to"),
    ("tries-negative", changed(tries=-1), "tries"),
    ("tries-a-boolean", changed(tries=True), "tries"),
    ("unconfirmed-as-text", changed(unconfirmed="no"), "unconfirmed"),
    ("creds-not-paths", changed(creds={"creds": 7}), "creds"),
    ("ack-not-an-object", changed(ack="relay"), "ack"),
    ("another-folders-id", changed(id="fedcba9876543210"), "id"),
    ("a-time-without-microseconds", changed(queued_at="2026-12-07T10:00:00Z"), "queued_at"),
    ("a-time-not-utc", changed(next_try="2026-12-07T11:00:00.000000+01:00"), "next_try"),
    ("last-error-not-text", changed(last_error=["down"]), "last_error"),
]

BACKOFF = [2, 5, 10, 20, 40, 80, 160, 180, 180, 180]  # seconds after the n-th failed try (n = 1, 2, ...)


def build() -> str:
    cases = [{"name": n, "folder": ID, "delivery": doc, "ok": ok is True, "field": None if ok is True else ok} for n, doc, ok in CASES]
    doc = {
        "about": "spec/relay.md section 11: delivery files (deliveries/<folder>/delivery.json) and the back-off between tries",
        "cases": cases,
        "backoff_after_tries": {str(i + 1): s for i, s in enumerate(BACKOFF)},
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main() -> int:
    text = build()
    if "--check" in sys.argv[1:]:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print("spec/vectors/outbox.json is out of date: run python spec/vectors/generate_outbox.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
