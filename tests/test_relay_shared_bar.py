"""Issue 26's bar: a relay configured as spec/relay.md section 8 documents it (the accounts
`gage relay config` generates), shared by alice, bob and mallory. Mallory, logged in as herself,
does what a stranger who knows bob's mailbox address can: she puts into his mailbox and bucket every
kind of hostile envelope (a meta with a digest of the wrong form, a meta whose chunks are missing,
a 60 KB object header, an age header of more stanzas than the bound, a meta with no mailbox message
at all) between alice's real envelopes, small and big. Bob's one fetch drops each of mallory's with one
bounded journal line, lands every one of alice's, and leaves nothing waiting: no mail is lost and
nothing stalls. (The isolation attacks themselves: tests/test_relay_isolation_attacks.py.)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyrage
import pytest
from pyrage import x25519
from relayiso import Shared, running
from relaytest import bundle
from test_relay_isolation import fetch, paired, send, waiting

from gage.carriers.relay import deliver, mailbox, objects, seal
from gage.home import listing, sealing, whereabouts


@pytest.fixture
def shared(make_home, tmp_path: Path) -> Iterator[Shared]:
    with running(make_home, tmp_path) as s:
        yield s


def _as_mallory(shared: Shared, work: Any) -> Any:
    async def go() -> Any:
        async with mailbox.connected(shared.url, shared.creds["mallory"]) as nc:
            return await work(nc.jetstream())

    return mailbox.run(go())


def test_mallory_fills_bobs_mailbox_with_hostile_envelopes_and_bob_loses_nothing(shared: Shared, tmp_path: Path) -> None:
    paired(shared, ("alice", "bob"))
    bob = shared.homes["bob"]
    addr, bucket = shared.addr["bob"], mailbox.bucket_name(shared.addr["bob"])
    stream = objects.stream_of(bucket)
    data = os.urandom(objects.CHUNK + 100)
    good_digest = hashlib.sha256(data).digest()

    def meta(name: str, nuid: str, **over: Any) -> bytes:
        m = objects.meta(bucket, name, nuid, len(data), 2, good_digest, objects.CHUNK)
        m.update(over)
        return json.dumps(m).encode()

    strangers = [x25519.Identity.generate().to_public() for _ in range(seal.STANZAS_MAX + 1)]
    many_stanzas = pyrage.encrypt(b"whatever", strangers)
    names = [hashlib.sha256(f"m{i}".encode()).hexdigest()[:32] for i in range(4)]
    huge = "h" * 60_000

    first = send(shared, "alice", "bob", tmp_path, data=b"before mallory")

    async def hostile(js: Any) -> None:
        head = {mailbox.HEADER: mailbox.ENVELOPE_VERSION}
        # 1. a digest of the wrong form (gage's check once passed it and nats-py's get raised)
        await js.publish(objects.chunk_subject(bucket, "N0"), data[: objects.CHUNK], stream=stream)
        await js.publish(objects.chunk_subject(bucket, "N0"), data[objects.CHUNK :], stream=stream)
        await js.publish(objects.meta_subject(bucket, names[0]), meta(names[0], "N0", digest="SHA-256=abc"), stream=stream)
        await js.publish(mailbox.subject(addr), b"", headers={**head, mailbox.OBJECT_HEADER: names[0]})
        # 2. a meta whose chunks never came
        await js.publish(objects.meta_subject(bucket, names[1]), meta(names[1], "N1"), stream=stream)
        await js.publish(mailbox.subject(addr), b"", headers={**head, mailbox.OBJECT_HEADER: names[1]})
        # 3. a 60 KB object header (it would have been journaled whole)
        await js.publish(mailbox.subject(addr), b"", headers={**head, mailbox.OBJECT_HEADER: huge})
        # 4. an age header of more recipient stanzas than the bound (each a key try)
        await js.publish(mailbox.subject(addr), many_stanzas, headers=head)
        # 5. a meta with no mailbox message naming it (it would count against bob's bucket for ever)
        await js.publish(objects.meta_subject(bucket, names[3]), meta(names[3], "N3"), stream=stream)

    _as_mallory(shared, hostile)

    # Alice's big envelope after mallory's, through bob's bucket.
    alice = shared.homes["alice"]
    big = bundle(alice, tmp_path, name="big.bin", data=os.urandom(mailbox.INLINE_MAX + 200_000))
    where = whereabouts.from_binding(sealing.load(bob.root, bob.identity.key).binding, relay=shared.url, source="key file")
    whereabouts.remember(alice, where)
    done = deliver.deliver(alice, alice.state_dir("outbox") / big, big, "bob", relay=shared.url, unconfirmed=False, creds=shared.creds["alice"])
    assert done.via == "object"
    last = send(shared, "alice", "bob", tmp_path, data=b"after mallory")

    landed = fetch(shared, "bob")
    assert sorted(i for i in landed if i) == sorted([first, big, last])
    for bid in (first, big, last):
        assert listing.find(bob, bid).state == "pending"
    drops = [e for e in bob.journal.entries() if e["event"] == "envelope-dropped"]
    assert len(drops) == 4, drops
    lines = [ln for ln in bob.journal.path.read_bytes().splitlines() if b'"envelope-dropped"' in ln]
    assert max(len(ln) for ln in lines) < 4096  # bounded (spec/relay.md section 6)
    assert waiting(shared, mailbox.stream_name(addr)) == 0  # every envelope taken: none waits, none stalls
    assert fetch(shared, "bob") == []
