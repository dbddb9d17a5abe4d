"""The command line of a shared relay: `gage relay config` prints what a stock `nats-server -c` runs;
the operator makes mailboxes with `mailbox create --address`; a person's credential is a file (0600)
whose path settings.toml keeps; a relay URL with a user or password is refused everywhere."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import relayiso
from gagetest import pair
from relaytest import bundle

from gage.carriers.relay import mailbox, relayconf, server
from gage.carriers.relay.creds import Credentials
from gage.format.errors import Exit, MalformedError, UsageError
from gage.home import sealing, settings, whereabouts

SECRET_URL = "nats://bob:hunter2@127.0.0.1:4222"


@pytest.fixture
def people(make_home, tmp_path: Path) -> tuple[dict, dict, dict, Path]:
    homes = {n: make_home(n) for n in ("alice", "bob", "mallory", "carol")}
    addr = relayiso.addresses(homes)
    people_file, creds = relayiso.write_people(tmp_path / "people", addr)
    return homes, addr, creds, people_file


@pytest.fixture
def running(people, gage, tmp_path: Path) -> Iterator[tuple[dict, dict, dict, server.Server]]:
    """A nats-server running the text `gage relay config` printed, and nothing else."""
    homes, addr, creds, people_file = people
    port = server.free_port()
    store = tmp_path / "store"
    r = gage(None, "relay", "config", str(people_file), "--listen", f"127.0.0.1:{port}", "--store", str(store), "--name", "one")
    assert r.code == 0, r.err
    srv = server.Server(store=tmp_path / "srv", port=port, name="one", conf=lambda _s: r.out)
    srv.start()
    try:
        yield homes, addr, creds, srv
    finally:
        srv.stop(kill=True)


def test_relay_config_prints_a_configuration_with_no_secret_in_it(people, gage) -> None:
    homes, addr, creds, people_file = people
    r = gage(None, "relay", "config", str(people_file))
    assert r.code == 0, r.err
    assert "carol's long passphrase" not in r.out and "$2" in r.out  # a bcrypt hash, never the password
    for n in ("alice", "bob", "mallory"):
        seed = Path(creds[n].nkey or "").read_text().strip()
        assert seed not in r.out
    doc = json.loads(r.out)  # JSON, as nats-server reads it
    assert [a for a, v in doc["accounts"].items() if "jetstream" in v] == ["MAIL"]  # MAIL's alone
    own_next = {"service": f"$JS.API.CONSUMER.MSG.NEXT.GAGE_MB_{addr['bob']}.inbox", "accounts": ["P_bob"], "response_type": "stream"}
    assert own_next in doc["accounts"]["MAIL"]["exports"]
    assert "_INBOX" not in r.out and "STREAM.NAMES" not in r.out and "STREAM.LIST" not in r.out
    same = relayconf.document(relayconf.load_people(str(people_file)), relayconf.Node())
    carol = doc["accounts"]["P_carol"]["users"][0]
    assert carol["user"] == "carol" and carol["password"].startswith("$2b$11$")
    for d in (same, doc):  # bcrypt salts differ from one run to the next
        d["accounts"]["P_carol"]["users"][0]["password"] = "-"
    assert same == doc  # the CLI is the generator, no more


def test_relay_config_refuses_what_would_weaken_it(people, gage, tmp_path: Path) -> None:
    homes, addr, creds, people_file = people
    text = people_file.read_text()
    os.chmod(tmp_path / "people" / "carol.pw", 0o644)
    r = gage(None, "relay", "config", str(people_file))
    assert r.code == Exit.USAGE and "chmod 600" in r.err
    os.chmod(tmp_path / "people" / "carol.pw", 0o600)
    seed = Path(creds["bob"].nkey or "").read_text().strip()
    for bad, says in [
        (text.replace('name = "mallory"', 'name = "bob"'), "given twice"),
        (text.replace('handle = "mallory"', 'handle = "bob"'), "given twice"),
        (text.replace(f'mailbox = "{addr["mallory"]}"', f'mailbox = "{addr["bob"]}"'), "given twice"),
        (text.replace(text.split('nkey = "')[2].split('"')[0], seed), "never a seed"),
        (text.replace("[operator]", "[boss]"), "unknown table"),
    ]:
        people_file.write_text(bad)
        r = gage(None, "relay", "config", str(people_file))
        assert r.code == Exit.MALFORMED and says in r.err, r.err
    people_file.write_text(text)
    r = gage(None, "relay", "config", str(people_file), "--route", "nats-route://h:6222")
    assert r.code == Exit.USAGE


def test_the_printed_configuration_runs_and_the_people_use_it_from_the_command_line(running, gage, tmp_path: Path) -> None:
    homes, addr, creds, srv = running
    op = creds["operator"]
    for n in addr:
        r = gage(None, "mailbox", "create", "--relay", srv.url, "--address", addr[n], "--nkey", op.nkey or "")
        assert r.code == 0 and r.out.strip() == addr[n], r.err
    bob, alice = homes["bob"], homes["alice"]
    r = gage(bob, "mailbox", "create", "--relay", srv.url, "--nkey", creds["bob"].nkey or "", "--max-msgs", "5")
    assert r.code == 0 and "made by the relay's operator" in r.err, r.err
    s = settings.load(bob)
    assert (s.relay_url, s.relay_nkey, s.relay_creds) == (srv.url, str(Path(creds["bob"].nkey or "").absolute()), None)
    assert Path(creds["bob"].nkey or "").read_text().strip() not in settings.path_of(bob).read_text()
    r = gage(alice, "mailbox", "create", "--relay", srv.url, "--nkey", creds["alice"].nkey or "")
    assert r.code == 0, r.err
    pair(alice, "bob", bob)
    whereabouts.remember(alice, whereabouts.from_binding(sealing.load(bob.root, bob.identity.key).binding, relay=srv.url, source="key file"))
    bid = bundle(alice, tmp_path)
    r = gage(alice, "deliver", bid, "--to", "bob")  # alice's credential from her settings.toml
    assert r.code == 0, r.err
    r = gage(homes["mallory"], "mailbox", "fetch", "--relay", srv.url, "--nkey", creds["mallory"].nkey or "")
    assert r.code == 0 and "the mailbox is empty" in r.err  # her own: the operator made it; bob's mail is not in it
    r = gage(bob, "mailbox", "fetch", "--json")
    assert r.code == 0 and bid in r.out, r.err
    r = gage(homes["carol"], "directory", "publish", "--handle", "carol", "--relay", srv.url,
             "--user", "carol", "--password-file", creds["carol"].password_file or "")
    assert r.code == 0, r.err


@pytest.mark.parametrize(
    "argv",
    [
        ["mailbox", "create", "--relay", SECRET_URL],
        ["mailbox", "fetch", "--relay", SECRET_URL],
        ["directory", "lookup", "bob", "--relay", SECRET_URL],
        ["directory", "publish", "--handle", "bob", "--relay", SECRET_URL],
        ["directory", "publish", "--handle", "bob", "--relay", "nats://127.0.0.1:1", "--advertise", SECRET_URL],
        ["deliver", "00", "--to", "bob", "--relay", SECRET_URL],
        ["contacts", "where", "bob", "--relay", SECRET_URL],
        ["pair", "--directory", "bob", "--name", "bob", "--relay", "nats://bob@127.0.0.1:4222"],
    ],
)
def test_a_relay_url_with_a_user_or_password_is_refused_everywhere(argv, make_home, gage) -> None:
    home = make_home("bob")
    if argv[0] in ("deliver", "contacts", "mailbox") and argv[1] != "create":
        with home.lock():
            sealing.ensure(home.root, home.identity.secret)
    r = gage(home, *argv)
    assert r.code == Exit.USAGE, (r.code, r.err)
    assert "may not carry a user or password" in r.err and "--password-file" in r.err
    assert "hunter2" not in r.out + r.err.replace(SECRET_URL, "")


def test_settings_with_a_password_in_the_relay_url_are_refused_naming_the_fix(make_home, gage) -> None:
    home = make_home("bob")
    with home.lock():
        sealing.ensure(home.root, home.identity.secret)
    settings.path_of(home).write_text(f'[relay]\nurl = "{SECRET_URL}"\n')
    with pytest.raises(MalformedError, match="may not carry a user or password"):
        settings.load(home)
    r = gage(home, "mailbox", "fetch")
    assert r.code == Exit.MALFORMED and "relay.url" in r.err


def test_a_credential_file_others_may_read_is_refused(make_home, gage, tmp_path: Path) -> None:
    home = make_home("bob")
    for opt in ("--creds", "--nkey"):
        f = tmp_path / f"cred{opt}"
        f.write_text("x")
        os.chmod(f, 0o640)
        r = gage(home, "mailbox", "create", "--relay", "nats://127.0.0.1:1", opt, str(f))
        assert r.code == Exit.USAGE and f"chmod 600 {f}" in r.err, r.err
    pw = tmp_path / "pw"
    pw.write_text("secret\n")
    os.chmod(pw, 0o604)
    r = gage(home, "mailbox", "create", "--relay", "nats://127.0.0.1:1", "--user", "bob", "--password-file", str(pw))
    assert r.code == Exit.USAGE and "chmod 600" in r.err
    r = gage(home, "mailbox", "create", "--relay", "nats://127.0.0.1:1", "--user", "bob")
    assert r.code == Exit.USAGE and "--password-file" in r.err
    os.chmod(pw, 0o600)
    r = gage(home, "mailbox", "create", "--relay", "nats://127.0.0.1:1", "--nkey", str(pw), "--user", "bob", "--password-file", str(pw))
    assert r.code == Exit.USAGE and "one kind of relay credential" in r.err
    assert not settings.path_of(home).exists()  # nothing recorded


def test_creds_without_nkeys_installed_is_a_usage_error_not_a_traceback(monkeypatch, tmp_path: Path) -> None:
    """Issue 26 item 11: `--creds FILE` crashed with ModuleNotFoundError: nkeys (not in the extra)."""
    f = tmp_path / "me.creds"
    f.write_text("-----BEGIN NATS USER JWT-----\n")
    os.chmod(f, 0o600)
    monkeypatch.setitem(sys.modules, "nkeys", None)
    for cred in (Credentials(creds=str(f)), Credentials(nkey=str(f))):
        with pytest.raises(UsageError, match="needs the nkeys package"):
            mailbox.run(mailbox.create("nats://127.0.0.1:1", "mb" + "0" * 40, creds=cred))


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('url = "nats://h:4222"\ncreds = "/a"\nnkey = "/b"\n', "one relay credential"),
        ('url = "nats://h:4222"\nuser = "bob"\n', "one relay credential"),
        ('url = "nats://h:4222"\npassword_file = "/pw"\n', "one relay credential"),
        ('url = "nats://h:1,nats://bob:pw@h:2"\n', "may not carry a user or password"),
        ('url = "nats://h:4222"\nsecret = "x"\n', "unknown setting"),
    ],
)
def test_settings_hold_one_credential_as_paths_and_no_secret(table: str, says: str, make_home) -> None:
    home = make_home("bob")
    settings.path_of(home).write_text("[relay]\n" + table)
    with pytest.raises(MalformedError, match=says):
        settings.load(home)


def test_the_recorded_credential_is_the_one_the_commands_use(make_home, tmp_path: Path) -> None:
    from gage.carriers.relay import config

    home = make_home("bob")
    pw = tmp_path / "pw"
    relayiso.secret_file(pw, "s3cret")
    config.record(home, "nats://h:4222", Credentials(user="bob", password_file=str(pw)))
    assert config.relay_creds(home) == Credentials(user="bob", password_file=str(pw))
    assert "s3cret" not in settings.path_of(home).read_text()
    config.record(home, "nats://h:4222", None)  # another relay, no credential: the old one's lines go
    assert config.relay_creds(home) is None and "password_file" not in settings.path_of(home).read_text()


def test_each_node_of_a_cluster_gets_a_configuration_nats_server_accepts(people, gage, tmp_path: Path) -> None:
    """`--cluster` with a route to each other node: one file per node, each checked by `nats-server -t`
    (the three-node fault test, tests/test_relay_faults.py, runs such files)."""
    import subprocess

    _homes, _addr, _creds, people_file = people
    for i in range(3):
        routes = [a for j in range(3) if j != i for a in ("--route", f"nats-route://127.0.0.1:{16222 + j}")]
        r = gage(None, "relay", "config", str(people_file), "--name", f"n{i}", "--cluster", "gage",
                 "--cluster-listen", f"127.0.0.1:{16222 + i}", "--store", str(tmp_path / f"n{i}"), *routes)
        assert r.code == 0, r.err
        doc = json.loads(r.out)
        assert doc["cluster"] == {"name": "gage", "listen": f"127.0.0.1:{16222 + i}", "routes": routes[1::2]} and doc["server_name"] == f"n{i}"
        conf = tmp_path / f"n{i}.conf"
        conf.write_text(r.out)
        t = subprocess.run([server.binary(), "-t", "-c", str(conf)], capture_output=True, text=True, timeout=30)
        assert t.returncode == 0, t.stdout + t.stderr
