"""No relay credential leaves the home (issue 26, item 1): for a home that already holds a URL
with a user and password in it (written before such URLs were refused), and for records that
other homes published that way, nothing gage writes or prints for anyone else carries them.

Each output is named: the directory record, the agent card, the journal's relay lines, the
verdict (CLI and MCP), `watch --mailbox`, `directory lookup`, `mailbox show`, deliver's output,
an error, and the whereabouts kept from a record. A real nats-server (open, so the password
in the URL is ignored by it, as an auth-free relay does).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from gagetest import pair
from relaytest import bundle, open_mailbox, relay  # noqa: F401  (fixtures)
from test_mcp import (  # imported here, before any capture: the MCP client binds sys.stderr then
    agent,
    call,
)
from test_relay_where import _read_lines, _where_from

from gage.carriers.a2a import card
from gage.carriers.relay import connection, directory, dirrecord, mailbox
from gage.format import relayurl, strictjson
from gage.format.errors import RefusedError
from gage.home import sealing, settings
from gage.home.layout import Home

SECRET = "s3cret-PW"


def _with_password(url: str, user: str) -> str:
    return url.replace("nats://", f"nats://{user}:{SECRET}@")


def _settle_old_url(home: Home, url: str) -> None:
    """settings.toml with this home's relay. A URL with the password in it, as homes made before
    credentials had to be files wrote it, is refused when the settings are read (exit 3, naming
    the setting: `test_an_old_settings_url_with_a_password_is_refused_and_never_printed`), so
    the outputs below are checked for a home whose relay is written as it must be now, while the
    records, where.json entries and journal lines an older gage wrote keep their passwords."""
    p = settings.path_of(home)
    text = p.read_text() if p.exists() else ""
    kept = "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith(("url", "[relay]")))
    p.write_text(kept + f'\n[relay]\nurl = "{relayurl.public(url)}"\n')


def test_an_old_settings_url_with_a_password_is_refused_and_never_printed(make_home, relay, gage) -> None:  # noqa: F811
    bob = make_home("bob")
    open_mailbox(bob, relay.url)
    p = settings.path_of(bob)
    kept = "".join(ln for ln in p.read_text().splitlines(keepends=True) if not ln.startswith(("url", "[relay]")))
    p.write_text(kept + f'\n[relay]\nurl = "{_with_password(relay.url, "bob")}"\n')
    for args in (("mailbox", "show"), ("mailbox", "fetch"), ("directory", "publish", "--handle", "bob"), ("mailbox", "show", "--json")):
        r = gage(bob, *args)
        said = r.out + r.err  # --json says it on stdout
        assert r.code == 3 and "relay.url" in said and "--password-file" in said, (args, said)
        _no_secret(r.out, r.err)


def _no_secret(*texts: str) -> None:
    for t in texts:
        assert SECRET.lower() not in t.lower(), t


def test_relayurl_strips_every_form() -> None:
    assert relayurl.public("nats://bob:pw@h:4222") == "nats://h:4222"
    assert relayurl.public("nats://bob:p%2Fw@x@h:4222,nats://u@h2:4223") == "nats://h:4222,nats://h2:4223"
    assert relayurl.public("nats://h:4222/[@click=x]") == "nats://h:4222/[@click=x]"  # a path's @ is no userinfo
    assert relayurl.scrub("at nats://h:1/a@b and tls://u:p@h:2") == "at nats://h:1/a@b and tls://h:2"
    assert relayurl.public("bob:pw@h") == "h"
    assert relayurl.has_userinfo("nats://h:1,nats://u:p@h:2") and not relayurl.has_userinfo("nats://h:1")
    assert relayurl.scrub("cannot reach the relay at nats://bob:pw@h:1: refused") == "cannot reach the relay at nats://h:1: refused"
    assert relayurl.same_relay("nats://a:b@H:4222", "nats://h") and relayurl.same_relay("nats://h1:1,nats://h2:2", "nats://h2:2,nats://h1:1")
    assert not relayurl.same_relay("nats://h:4222", "nats://h:4223") and not relayurl.same_relay("nats://h", None)


def test_publish_names_no_password_and_a_record_with_one_is_refused(make_home, relay, gage) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    _settle_old_url(bob, _with_password(relay.url, "bob"))
    r = gage(bob, "directory", "publish", "--handle", "bob")
    assert r.code == 0, r.err
    _no_secret(r.out, r.err)
    raw = mailbox.run(directory.get_raw(relay.url, "bob"))
    assert SECRET.encode() not in raw and json.loads(json.loads(raw)["record"])["relay"] == relay.url
    # an explicit --advertise with a password is refused, and the record in the directory stays as it was
    r = gage(bob, "directory", "publish", "--handle", "bob", "--advertise", _with_password(relay.url, "bob"))
    assert r.code == 2 and "may not carry a user or password" in r.err
    _no_secret(r.out, r.err)
    assert mailbox.run(directory.get_raw(relay.url, "bob")) == raw
    with pytest.raises(RefusedError):
        dirrecord.build(bob.identity.secret, "bob", sealing.load(bob.root, bob.identity.key).binding, "nats://u:p@h:4222")
    r = gage(alice, "directory", "lookup", "bob", "--relay", relay.url)
    assert r.code == 0 and relay.url in r.out


def test_an_old_record_with_a_password_is_never_shown_or_kept(make_home, relay, gage) -> None:  # noqa: F811
    """A record a gage before the rule published (the directory keeps 16): lookup, pair's claim,
    where.json and contacts never carry its password on."""
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    binding = sealing.load(bob.root, bob.identity.key).binding
    rawrec = strictjson.dumps({
        "gage-directory-record": 1, "handle": "bob", "signing_key": bob.identity.key_text, "sealing": binding.to_carried(),
        "mailbox": sealing.mailbox_address(binding.sealing_key), "relay": _with_password(relay.url, "bob"),
        "published_at": "2026-01-01T00:00:00Z",
    })
    signed = strictjson.dumps({"gage-signed-directory-record": 1, "record": rawrec.decode(), "signature": dirrecord.sign_record(bob.identity.secret, rawrec).hex()})
    mailbox.run(directory.put_raw(relay.url, "bob", signed))
    _settle_old_url(alice, _with_password(relay.url, "alice"))
    r = gage(alice, "directory", "lookup", "bob")
    j = gage(alice, "directory", "lookup", "bob", "--json")
    assert r.code == 0 and j.code == 0 and json.loads(j.out)["relay"] == relay.url
    _no_secret(r.out, r.err, j.out, j.err)
    for name in ("where.json", "contacts.toml"):
        p = alice.root / name
        _no_secret(p.read_text() if p.exists() else "")
    c = gage(alice, "contacts", "--json")
    _no_secret(c.out, gage(alice, "contacts").out)


def test_the_agent_card_names_no_password(make_home, relay, gage) -> None:  # noqa: F811
    bob = make_home("bob")
    open_mailbox(bob, relay.url)
    _settle_old_url(bob, _with_password(relay.url, "bob"))
    assert card.card_extension(bob)["params"]["relay"] == relay.url
    r = gage(bob, "a2a", "card", "--url", "http://127.0.0.1:8470/", "--json")
    assert r.code == 0 and relay.url in r.out
    _no_secret(r.out, r.err)


def _delivered(alice: Home, bob: Home, relay_url: str, tmp: Path, gage) -> str:
    pair(alice, "bob", bob)
    _where_from(alice, bob, relay_url)
    bid = bundle(alice, tmp)
    r = gage(alice, "deliver", bid, "--to", "bob")
    assert r.code == 0, r.err
    return bid


def test_deliver_and_mailbox_show_print_no_password(make_home, relay, gage, tmp_path: Path) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    open_mailbox(alice, relay.url)
    _settle_old_url(alice, _with_password(relay.url, "alice"))
    pair(alice, "bob", bob)
    _where_from(alice, bob, relay.url)
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob")
    j = gage(alice, "deliver", bid, "--to", "bob", "--json")
    assert r.code == 0 and j.code == 0 and json.loads(j.out)["relay"] == relay.url
    _no_secret(r.out, r.err, j.out, j.err)
    s, sj = gage(alice, "mailbox", "show"), gage(alice, "mailbox", "show", "--json")
    assert relay.url in s.out and json.loads(sj.out)["relay"] == relay.url
    _no_secret(s.out, s.err, sj.out)


def test_an_error_naming_the_relay_shows_no_password(make_home, gage) -> None:
    alice = make_home("alice")
    with alice.lock():
        sealing.ensure(alice.root, alice.identity.secret)
    _settle_old_url(alice, "nats://alice:" + SECRET + "@127.0.0.1:1")
    for extra in ((), ("--json",)):
        r = gage(alice, "mailbox", "fetch", *extra)
        assert r.code != 0 and "127.0.0.1:1" in r.out + r.err
        _no_secret(r.out, r.err)


def test_journal_verdict_and_mcp_carry_no_password(make_home, relay, gage, tmp_path: Path, monkeypatch, capsys) -> None:  # noqa: F811
    alice, bob = make_home("alice"), make_home("bob")
    open_mailbox(bob, relay.url)
    _settle_old_url(bob, _with_password(relay.url, "bob"))
    first = _delivered(alice, bob, relay.url, tmp_path, gage)
    r = gage(bob, "mailbox", "fetch")
    assert r.code == 0, r.err
    _no_secret(r.out, r.err)
    _no_secret(bob.journal.path.read_text())
    # a journal line an older gage wrote with the password in it: the verdict never hands it on
    from gage.format import relayurl  # the module the journal writer calls

    monkeypatch.setattr(relayurl, "clean_transport", lambda d: d)
    monkeypatch.setattr(connection, "check_url", lambda url: None)  # as an older gage took the URL
    second = bundle(alice, tmp_path, name="two.txt", data=b"two")
    assert gage(alice, "deliver", second, "--to", "bob").code == 0
    with bob.lock():
        addr = sealing.mailbox_address(sealing.ensure(bob.root, bob.identity.secret).recipient)
    mailbox.run(mailbox.fetch(bob, _with_password(relay.url, "bob"), addr))
    assert SECRET in bob.journal.path.read_text()  # the old line, as it was written
    monkeypatch.undo()
    for bid in (first, second):
        v = gage(bob, "verdict", bid, "--json")
        assert v.code == 0 and json.loads(v.out)["transport"]["relay"] == relay.url
        _no_secret(v.out, gage(bob, "verdict", bid).out, gage(bob, "read", bid).out)
    _no_secret(gage(bob, "journal", "show").out, gage(bob, "journal", "show", "--json").out)
    async def ask() -> str:
        async with agent(bob) as c:
            return await call(c, "verdict", id=second)

    with capsys.disabled():  # the MCP client hands the server's stderr a real file
        answer = asyncio.run(ask())
    assert relay.url in answer
    _no_secret(answer)


def test_watch_mailbox_prints_no_password(make_home, relay, tmp_path: Path) -> None:  # noqa: F811
    bob = make_home("bob")
    open_mailbox(bob, relay.url)
    _settle_old_url(bob, _with_password(relay.url, "bob"))
    for extra in ([], ["--json"]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "gage.cli.main", "--home", str(bob.root), "watch", "--mailbox", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ},
        )
        try:
            if extra:
                lines = _read_lines(proc, "watching mailbox", 30)
                _no_secret(json.dumps(lines))
                assert any(relay.url in e["message"] for e in lines)
            else:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                assert "watching mailbox" in line and relay.url in line
                _no_secret(line)
        finally:
            proc.send_signal(signal.SIGTERM)
            out, errs = proc.communicate(timeout=30)
        _no_secret(out, errs)
