"""Rules a second implementation could not decide from the prose (issue 29, items 8 and 10), each
pinned to what gage does, so that the spec text and the code cannot drift apart again."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from gage.carriers.a2a import reader
from gage.carriers.a2a.export import export_artifact
from gage.format.errors import MalformedError
from gage.format.keys import key_text
from gage.format.keys import seal as keyseal
from gage.format.keys.file import KeyFile
from gage.home import authority, listing, settings
from gage.inbox import send
from gage.trust.limits import declared_bytes


def _keyfile(home_key: bytes, **extra: object) -> bytes:
    return json.dumps({"gage-key": 1, "key": key_text(home_key), "name": "bob", **extra}).encode()


def test_a_key_file_with_sealing_null_reads_as_one_without_sealing(make_home) -> None:
    bob = make_home("bob")
    assert KeyFile.parse(_keyfile(bob.identity.key, sealing=None)).sealing is None


@pytest.mark.parametrize("sealing", ["text", 5, ["a"], {"binding": 1}])
def test_a_key_file_with_a_wrong_shaped_sealing_is_malformed_and_names_it(make_home, sealing: object) -> None:
    bob = make_home("bob")
    with pytest.raises(MalformedError) as caught:
        KeyFile.parse(_keyfile(bob.identity.key, sealing=sealing))
    assert caught.value.field == "sealing"


def test_a_key_file_unknown_field_names_no_field_and_lists_the_names_sorted(make_home) -> None:
    bob = make_home("bob")
    with pytest.raises(MalformedError) as caught:
        KeyFile.parse(_keyfile(bob.identity.key, zeta=1, alpha=2))
    assert caught.value.field is None and "['alpha', 'zeta']" in caught.value.message


def test_settings_errors_name_the_setting_its_section_or_nothing(tmp_path: Path) -> None:
    p = tmp_path / "settings.toml"
    cases = {
        b"[limits]\nmax_files = -1\n": "limits.max_files",
        b"[limits]\nmax_file = 5\n": "limits",
        b"[limit]\nmax_files = 5\n": None,
    }
    for raw, field in cases.items():
        with pytest.raises(MalformedError) as caught:
            settings.parse(raw, p)
        assert caught.value.field == field, raw


def test_authority_missing_fields_are_one_error_naming_them_sorted() -> None:
    parsed = authority.parse('[[grant]]\nkind = "share"\n', None)
    assert parsed.errors == ["authority.toml:1: missing contact, may"]


def test_a_hybrid_bundle_counts_its_real_signature_length(make_home, tmp_path: Path) -> None:
    alice = make_home("alice")
    f = tmp_path / "f.txt"
    f.write_text("12345")
    m, _ = send.create(alice, [f], kind="share")
    assert declared_bytes(m) == len(m.raw) + 3373 + 5


def test_a_sealed_box_is_the_tag_and_ciphertext_without_the_nonce() -> None:
    key = keyseal.derive(b"a passphrase", b"s" * 16, opslimit=1, memlimit=8192)
    sealed = keyseal.seal(b"plain identity bytes", key, nonce=b"n" * 24)
    assert len(sealed.box) == len(b"plain identity bytes") + 16
    assert not sealed.box.startswith(b"n" * 24)


def test_a_non_string_media_type_is_passed_over(make_home, tmp_path: Path) -> None:
    alice = make_home("alice")
    f = tmp_path / "f.txt"
    f.write_text("hello")
    m, _ = send.create(alice, [f], kind="share")
    art = export_artifact(listing.find(alice, m.id).path)
    for part in art["parts"]:
        part["mediaType"] = 7
    (carried,) = reader.parse(json.loads(json.dumps(art)))
    assert carried.id == m.id
    assert base64.b64decode(art["parts"][0]["raw"]) == m.raw
