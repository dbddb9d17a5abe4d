"""`gage mailbox fetch` holds what one batch holds, however many envelopes wait (a batch is bounded
in bytes and count, not by the mailbox): nothing is kept per envelope landed, neither for the
pending limits (sums per sender, and 20 bytes a pending bundle in arrays, not an object per bundle), nor for the summary line (counts), nor
for `--json` (each item written out as its batch is acknowledged, the document printed whole at
the end, byte for byte what it was when every outcome was held).

Measured with tracemalloc around the command run in process, in small batches: fetches of N and
of 4N, twice each, after a first fetch that brings the process to its working size (imports, the
interpreter's tables); the least of each two is compared, so a table that grows once is not taken
for what a bundle costs. Every payload is the same size, so every batch peaks alike. What a fetch
of 4N holds after it, and its peak, may pass a fetch of N's by a few bytes a bundle; before, a
bundle cost 400 to 830 B held after (the pending limits' entry and cache, the outcome and its id,
the interned path parts) and 1.3 to 2.3 KB at the peak (the outcomes, and the whole JSON document
made at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import secrets
import tracemalloc
from pathlib import Path

import nats
import pytest
from relaytest import open_mailbox, relay  # noqa: F401  (fixtures)

from gage.carriers.relay import mailbox, seal, server
from gage.cli.main import main as cli_main
from gage.home import sealing
from gage.home.layout import Home
from gage.inbox import landmany, send

N = 32
# What a bundle more may add, measured here: held after, 0 to 40 B (noise); at the peak 300 to 400 B
# from 32 to 128 bundles, less the more there are (31 B a bundle from 1,024 to 4,096: free lists
# and the interpreter's tables filling, emptied at the end), where the fetch held 400 to 830 B a
# bundle after it and grew its peak by 1,300 to 2,300 B a bundle before.
HELD_PER_BUNDLE = 200
PEAK_PER_BUNDLE = 800
NO_LIMITS = (
    "[limits]\npending_per_key = 1000000\npending_unconfirmed = 1000000\n"
    "pending_bytes_per_key = 1125899906842624\npending_unconfirmed_bytes = 1125899906842624\n"
)


def _post(url: str, address: str, envelopes: list[Path]) -> None:
    async def go() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        for e in envelopes:
            headers = {mailbox.HEADER: mailbox.ENVELOPE_VERSION, "Nats-Msg-Id": secrets.token_hex(16)}
            await js.publish(mailbox.subject(address), e.read_bytes(), headers=headers, stream=mailbox.stream_name(address))
        await nc.close()

    asyncio.run(go())


def _envelopes(alice: Home, bob: Home, tmp: Path, n: int) -> list[tuple[str, Path]]:
    key = sealing.load(bob.root, bob.identity.key)
    assert key is not None
    out = []
    for _ in range(n):
        src = tmp / "note.bin"
        src.write_bytes(os.urandom(2048))  # one size: every batch's peak the same, whichever is the highest
        m, dest = send.create(alice, [src], kind="share")
        env = tmp / f"{m.id}.age"
        with open(env, "wb") as f:
            seal.seal_bundle(dest, key.recipient, f)
        out.append((m.id, env))
    return out


def _fetch(bob: Home, out: Path, *args: str) -> tuple[int, int]:
    """`gage mailbox fetch ARGS` in process, its output to files: the bytes it still holds after, and its peak."""
    gc.collect()
    before, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    with open(out, "w") as stdout, open(out.with_suffix(".err"), "w") as stderr:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = cli_main(["--home", str(bob.root), "mailbox", "fetch", *args])
    assert code == 0, out.with_suffix(".err").read_text()
    _, peak = tracemalloc.get_traced_memory()
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    return after - before, peak - before


@pytest.mark.parametrize("json_out", [True, False], ids=["json", "summary"])
def test_a_fetch_of_many_holds_what_a_fetch_of_few_holds(
    make_home, relay: server.Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, json_out: bool  # noqa: F811
) -> None:
    # Small batches, so a few hundred envelopes are many batches; each big enough to keep its rows
    # in the row index (gage.inbox.listed.keep_landed), as a fetch's batches of 256 do.
    monkeypatch.setattr(mailbox, "BATCH_COUNT", landmany.KEEP_ROWS_MIN)
    alice, bob = make_home("alice"), make_home("bob")
    (bob.root / "settings.toml").write_text(NO_LIMITS)
    address = open_mailbox(bob, relay.url)
    sizes = [4 * N, N, 4 * N, N, 4 * N]  # the first brings the process to its working size
    made = _envelopes(alice, bob, tmp_path, sum(sizes))
    args = ("--json",) if json_out else ()
    measured: dict[int, list[tuple[int, int]]] = {N: [], 4 * N: []}
    tracemalloc.start(1)
    try:
        at = 0
        for k, n in enumerate(sizes):
            _post(relay.url, address, [e for _i, e in made[at : at + n]])
            got = _fetch(bob, tmp_path / f"{k}.out", *args)
            if k:
                measured[n].append(got)
            at += n
    finally:
        tracemalloc.stop()
    last = made[at - 4 * N : at]
    if json_out:
        text = (tmp_path / f"{len(sizes) - 1}.out").read_text()
        doc = json.loads(text)
        assert text == json.dumps(doc, indent=2, ensure_ascii=True) + "\n"  # what emit_json prints of it, byte for byte
        assert [o["id"] for o in doc["fetched"]] == [i for i, _e in last] and doc["more"] is False
        assert all(o["new"] and o["ok"] and o["state"] == "pending" for o in doc["fetched"])
    else:
        assert (tmp_path / f"{len(sizes) - 1}.err").read_text().splitlines()[-1].startswith(f"fetched {4 * N} envelopes (")
    assert len(os.listdir(bob.state_dir("pending"))) == sum(sizes)
    # The least of two runs of each: an interpreter's table that grows once (its strings, a
    # free list) lands in one run or the other, not in what a bundle costs.
    held_few, peak_few = (min(m[i] for m in measured[N]) for i in (0, 1))
    held_many, peak_many = (min(m[i] for m in measured[4 * N]) for i in (0, 1))
    held, peak = (held_many - held_few) / (3 * N), (peak_many - peak_few) / (3 * N)
    said = f"a bundle more: {held:.0f} B held after, {peak:.0f} B at the peak ({held_few} and {peak_few} B for {N}, {held_many} and {peak_many} B for {4 * N})"
    assert held < HELD_PER_BUNDLE and peak < PEAK_PER_BUNDLE, said
