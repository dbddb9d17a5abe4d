"""Where spec/ and the code disagreed (a stranger's implementation from spec/ alone found these), each
decided and pinned: the `where` object's fingerprint, a bad binding's field name, how `contacts where`
reads a NAME that is a key, the rendezvous exports, and the relay config flags that mean nothing alone."""

from __future__ import annotations

import json
from pathlib import Path

import relayiso
from gagetest import pair

from gage.carriers.relay import relayconf
from gage.format.errors import Exit, MalformedError
from gage.format.keys import key_text, short_fingerprint
from gage.home import sealing, whereabouts


def test_the_where_object_has_the_fingerprint_beside_the_key(make_home, gage, tmp_path: Path) -> None:
    """spec/cli.md: in JSON every object naming a key has `fingerprint` beside `key`, `where` too."""
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    drop = tmp_path / "drop"
    drop.mkdir()
    r = gage(alice, "contacts", "where", "bob", "--folder", str(drop), "--json")
    w = json.loads(r.out)["where"]
    assert w["key"] == key_text(bob.identity.key) and w["fingerprint"] == short_fingerprint(bob.identity.key)
    rows = {row["key"]: row for row in json.loads(gage(alice, "contacts", "--json").out)}
    assert rows[key_text(bob.identity.key)]["where"]["fingerprint"] == short_fingerprint(bob.identity.key)


def test_a_bad_binding_names_the_statement_field_under_sealing_binding(make_home) -> None:
    """bundle.md section 7: `sealing.binding.<statement field>`; a binding that is not JSON, `sealing.binding`."""
    bob = make_home("bob")
    with bob.lock():
        b = sealing.ensure(bob.root, bob.identity.secret).binding
    stmt = json.loads(b.raw)
    for edit, field in [({"sealing_key": "age1nope"}, "sealing.binding.sealing_key"), ({"bound_at": "yesterday"}, "sealing.binding.bound_at")]:
        bad = json.dumps({**stmt, **edit})
        try:
            sealing.parse_carried({"binding": bad, "signature": b.signature.hex()})
        except MalformedError as exc:
            assert exc.field == field, exc.field
        else:
            raise AssertionError("a bad binding was read")
    for text in ("not json", "[1]"):
        try:
            sealing.parse_carried({"binding": text, "signature": b.signature.hex()})
        except MalformedError as exc:
            assert exc.field == "sealing.binding", (text, exc.field)
        else:
            raise AssertionError("a binding that is not a JSON object was read")


def test_contacts_where_reads_a_name_or_a_key_as_cli_md_says(make_home, gage, tmp_path: Path) -> None:
    alice, bob = make_home("alice"), make_home("bob")
    pair(alice, "bob", bob)
    drop = tmp_path / "d"
    drop.mkdir()
    before = (alice.root / "where.json").exists()
    # a confirmed contact's whole key text (a hybrid key by default): refused, 9, not "unknown", 6
    whole = key_text(bob.identity.key)
    r = gage(alice, "contacts", "where", whole, "--folder", str(drop))
    assert r.code == Exit.REFUSED and "confirmed contact" in r.err, (r.code, r.err)
    r = gage(alice, "contacts", "where", short_fingerprint(bob.identity.key), "--folder", str(drop))
    assert r.code == Exit.REFUSED
    # fewer than 8 hex digits and no contact of that name: a name, unknown (6)
    r = gage(alice, "contacts", "where", "abcd12", "--folder", str(drop))
    assert r.code == Exit.UNKNOWN_KEY and "no contact named" in r.err
    # key text with too few digits: clearly a key, too short to say which: 2
    r = gage(alice, "contacts", "where", "ed25519:abcd", "--folder", str(drop))
    assert r.code == Exit.USAGE and "8 hex digits" in r.err
    # 8 hex digits of no key at all: 6
    r = gage(alice, "contacts", "where", "00000000", "--folder", str(drop))
    assert r.code == Exit.UNKNOWN_KEY
    assert (alice.root / "where.json").exists() == before and whereabouts.of(alice, bob.identity.key) is None


def test_the_rendezvous_is_read_by_message_get_only_no_direct_get_export(make_home) -> None:
    """Section 8.2 exported `$JS.API.DIRECT.GET.GAGE_RV.>` while section 10's GAGE_RV has no direct gets and
    the invite reads by STREAM.MSG.GET alone: the export is gone."""
    assert not any("DIRECT.GET.GAGE_RV" in s for s in relayconf.PUBLIC)
    assert "$JS.API.STREAM.MSG.GET.GAGE_RV" in relayconf.PUBLIC
    homes = {"alice": make_home("alice")}
    people = relayconf.parse_people(relayiso_people(relayiso.addresses(homes)).encode(), "people.toml")
    text = relayconf.render(people, relayconf.Node())
    assert "DIRECT.GET.GAGE_RV" not in text and "DIRECT.GET.KV_GAGE_DIRECTORY" in text


def relayiso_people(addr: dict[str, str]) -> str:
    nkey = "U" + "A" * 55
    lines = ["[operator]", f'nkey = "{nkey}"']
    for i, (n, a) in enumerate(addr.items()):
        lines += ["[[person]]", f'name = "{n}"', f'mailbox = "{a}"', f'handle = "{n}"', f'nkey = "U{"B" * 54}{"ABCDEFG"[i]}"']
    return "\n".join(lines) + "\n"


def test_a_person_named_gage_operator_is_refused(make_home) -> None:
    addr = relayiso.addresses({"x": make_home("x")})
    text = relayiso_people(addr).replace('name = "x"', 'name = "gage-operator"')
    try:
        relayconf.parse_people(text.encode(), "people.toml")
    except MalformedError as exc:
        assert exc.field == "person[0].name" and "gage-operator" in exc.message and "line 4" in str(exc)
    else:
        raise AssertionError("a person named gage-operator was accepted")


def test_an_invite_number_is_drawn_from_1_to_99_ten_times_then_from_1_to_9999(monkeypatch) -> None:
    """Section 10: "from 1 to 9999 once ten of those are taken" meant ten draws that each found a live offer."""
    import time as _time

    from gage.carriers.relay import invite, rendezvous

    ranges: list[int] = []
    real = invite.secrets.randbelow
    monkeypatch.setattr(invite.secrets, "randbelow", lambda n: (ranges.append(n) if n in (99, rendezvous.MAX_NAMEPLATE) else None) or real(n))
    held = {"left": 12}

    async def newest(_nc, _subject, _kinds, *, until):
        if held["left"] == 0:
            return None, []
        held["left"] -= 1
        return rendezvous.Said(seq=1, time=_time.time(), body=invite._msg("offer", ttl=600)), []

    async def say(_nc, _subject, _body):
        return 7

    async def on_relay(_url, _creds, step):
        return await step(None)

    monkeypatch.setattr(rendezvous, "newest", newest)
    monkeypatch.setattr(rendezvous, "say", say)
    monkeypatch.setattr(invite, "_on_relay", on_relay)
    inv = invite.Inviter("nats://127.0.0.1:1", None, None, 600)
    code = inv.open()
    assert ranges == [99] + [99] * 10 + [rendezvous.MAX_NAMEPLATE] * 2  # the first draw, ten more from 1 to 99, then wider
    assert 1 <= code.nameplate <= rendezvous.MAX_NAMEPLATE


def test_a_cards_bad_binding_names_the_cards_own_members(make_home) -> None:
    """A card keeps the binding in `params.sealing_binding` and `params.sealing_signature`: an error names those."""
    from gage.carriers.a2a import card

    bob = make_home("bob")
    with bob.lock():
        sealing.ensure(bob.root, bob.identity.secret)
    doc = card.agent_card(bob, "http://127.0.0.1:8470/")
    at = "capabilities.extensions.params"
    ext = next(e for e in doc["capabilities"]["extensions"] if "sealing_binding" in e.get("params", {}))
    good = dict(ext["params"])
    for edit, field in [
        ({"sealing_binding": "not json"}, f"{at}.sealing_binding"),
        ({"sealing_binding": good["sealing_binding"].replace('"bound_at":"', '"bound_at":"x')}, f"{at}.sealing_binding.bound_at"),
        ({"sealing_signature": "zz"}, f"{at}.sealing_signature"),
    ]:
        ext["params"] = {**good, **edit}
        try:
            card.parse_card(json.dumps(doc).encode(), "card.json")
        except MalformedError as exc:
            assert exc.field == field, (edit, exc.field)
        else:
            raise AssertionError(f"a bad card binding was read: {edit}")
