"""A fault of this home acknowledges nothing; what one envelope may cost is bounded (issue 26, items 6
and 9), on a real nats-server.

A full disk (a small tmpfs mounted over the home's staging folder: these tests run as root in CI;
they skip, saying so, where mount is not allowed) or a read-only one while an envelope is opened is
exit 7 with nothing journaled and nothing acknowledged, and the envelope lands at the next fetch.
An envelope whose age header has more recipient stanzas, or more bytes, than spec/relay.md section
6 allows is dropped before any key is tried.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyrage
import pytest
from gagetest import stop_process
from pyrage import x25519
from relaytest import bundle, relay  # noqa: F401  (fixtures)
from test_relay_mailbox import _address, two  # noqa: F401  (fixture)

from gage.carriers.relay import deliver, mailbox, seal
from gage.format.errors import Exit
from gage.home import listing, sealing


@contextlib.contextmanager
def _mounted(where: Path, options: str) -> Iterator[None]:
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def _drops(home: Any) -> list[dict[str, Any]]:
    return [e for e in home.journal.entries() if e["event"] == "envelope-dropped"]


def _deliver(alice: Any, bid: str) -> None:
    deliver.deliver(alice, alice.state_dir("outbox") / bid, bid, "bob", relay=None, unconfirmed=False, creds=None)


def test_a_full_disk_while_opening_an_envelope_acknowledges_nothing_and_it_lands_later(two, tmp_path, gage) -> None:  # noqa: F811
    alice, bob = two
    bid = bundle(alice, tmp_path, name="big.bin", data=os.urandom(700_000))  # one message, about 700 KB
    _deliver(alice, bid)
    # 1.1 MB free where envelopes are opened: the envelope fits, the bundle opened beside it does not.
    with _mounted(bob.staging, "size=1100k,mode=0700"):
        r = gage(bob, "mailbox", "fetch")
        assert r.code == Exit.IO == 7, (r.code, r.err)
        assert "No space left on device" in r.err and "stays on the relay" in r.err and "dropped" not in r.err
    assert not _drops(bob) and listing.find(bob, bid) is None
    r = gage(bob, "mailbox", "fetch", "--json")  # space again: at once, not after the ack wait
    assert r.code == 0, r.err
    assert listing.find(bob, bid) is not None and listing.find(bob, bid).state == "pending"
    assert not _drops(bob)


def test_a_disk_full_before_the_envelope_is_even_written_is_the_same(two, tmp_path, gage) -> None:  # noqa: F811
    alice, bob = two
    bid = bundle(alice, tmp_path, name="big.bin", data=os.urandom(mailbox.INLINE_MAX + 300_000))  # by the bucket
    _deliver(alice, bid)
    with _mounted(bob.staging, "size=600k,mode=0700"):
        r = gage(bob, "mailbox", "fetch")
        assert r.code == 7 and "No space left on device" in r.err, (r.code, r.err)
    assert not _drops(bob)
    assert gage(bob, "mailbox", "fetch").code == 0
    assert listing.find(bob, bid).state == "pending"


def test_a_folder_this_home_may_not_write_acknowledges_nothing(two, tmp_path, gage) -> None:  # noqa: F811
    """Permission denied (a read-only file system here: root ignores mode bits) is this home's fault."""
    alice, bob = two
    bid = bundle(alice, tmp_path)
    _deliver(alice, bid)
    with _mounted(bob.staging, "size=1m,ro"):
        r = gage(bob, "mailbox", "fetch")
        assert r.code == 7 and "Read-only file system" in r.err, (r.code, r.err)
    assert not _drops(bob) and listing.find(bob, bid) is None
    assert gage(bob, "mailbox", "fetch").code == 0 and listing.find(bob, bid).state == "pending"


def _publish(url: str, address: str, data: bytes, tmp: Path) -> None:
    p = tmp / f"raw-{len(list(tmp.glob('raw-*')))}.age"
    p.write_bytes(data)
    mailbox.run(mailbox.publish(url, address, p))


def test_an_age_header_of_too_many_stanzas_or_bytes_is_dropped_before_any_key_is_tried(two, tmp_path, relay, monkeypatch) -> None:  # noqa: F811
    """Each stanza costs a key try (milliseconds): thousands would hold the mailbox for a minute."""
    alice, bob = two
    addr = _address(bob)
    strangers = [x25519.Identity.generate().to_public() for _ in range(seal.STANZAS_MAX + 1)]
    many = pyrage.encrypt(b"whatever", strangers)
    stanza = b"-> X25519 " + b"A" * 43 + b"\n" + b"B" * 43 + b"\n"
    long_body = b"-> junk " + b"x" * 10 + b"\n" + (b"C" * 64 + b"\n") * ((seal.HEADER_MAX // 65) + 10) + b"C\n"
    long_header = seal.AGE_MAGIC + stanza + long_body + b"--- " + b"D" * 43 + b"\n" + os.urandom(100)
    _publish(relay.url, addr, many, tmp_path)
    _publish(relay.url, addr, long_header, tmp_path)
    bid = bundle(alice, tmp_path)
    _deliver(alice, bid)
    tried: list[int] = []
    real = pyrage.decrypt_io

    def counting(*a: Any, **kw: Any) -> Any:
        tried.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(pyrage, "decrypt_io", counting)
    got = mailbox.run(mailbox.fetch(bob, relay.url, addr))
    assert [o.id for o in got.opened] == [None, None, bid]
    drops = _drops(bob)
    assert f"{seal.STANZAS_MAX + 2} recipient stanzas, over the {seal.STANZAS_MAX}" in drops[0]["message"]  # the grease one too
    assert f"longer than the {seal.HEADER_MAX} bytes" in drops[1]["message"]
    assert len(tried) == 1  # only the contact's envelope was ever tried


def test_an_envelope_to_this_home_among_several_recipients_within_the_bound_still_lands(two, tmp_path, relay) -> None:  # noqa: F811
    alice, bob = two
    key = sealing.load(bob.root, bob.identity.key)
    bid = bundle(alice, tmp_path)
    plain = tmp_path / "e.age"
    with open(plain, "wb") as f:
        seal.seal_bundle(alice.state_dir("outbox") / bid, key.recipient, f)
    # Sealed again by hand to bob and others: as many stanzas as the bound allows (age adds a grease one).
    from gage.carriers.relay import envelope

    others = [x25519.Identity.generate().to_public() for _ in range(seal.STANZAS_MAX - 2)]
    data = pyrage.encrypt(envelope.to_bytes(alice.state_dir("outbox") / bid), [seal.recipient(key.recipient), *others])
    assert data.count(b"\n-> ") == seal.STANZAS_MAX
    _publish(relay.url, _address(bob), data, tmp_path)
    got = mailbox.run(mailbox.fetch(bob, relay.url, _address(bob)))
    assert [(o.id, o.dropped) for o in got.opened] == [(bid, None)]


def test_watch_mailbox_says_a_full_disk_goes_on_and_lands_the_envelope_once_there_is_room(two, tmp_path) -> None:  # noqa: F811
    """The real `gage watch --mailbox` process: the error is said, the watcher keeps running, nothing is
    dropped, and once the disk has room the same envelope lands (it was handed back, not acknowledged)."""
    import sys

    from test_relay_where import _read_lines

    alice, bob = two
    bid = bundle(alice, tmp_path, name="big.bin", data=os.urandom(700_000))
    with _mounted(bob.staging, "size=1100k,mode=0700"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "gage.cli.main", "--home", str(bob.root), "watch", "--mailbox", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ},
        )
        try:
            _read_lines(proc, "watching mailbox", 30)
            _deliver(alice, bid)
            errors = _read_lines(proc, "No space left on device", 30)
            assert any(e["kind"] == "error" and "stays on the relay" in e["message"] for e in errors)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    try:
        assert proc.poll() is None  # still watching
        lines = _read_lines(proc, f"received {bid[:12]} from the mailbox", 60)
        assert any(e["kind"] == "imported" and e["id"] == bid for e in lines)
    finally:
        stop_process(proc)
    assert listing.find(bob, bid).state == "pending" and not _drops(bob)
