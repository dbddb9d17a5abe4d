"""The manifest schema, strict JSON, path rules, key text and key files, at their boundaries.

The malformed vectors (test_vectors_bundle.py) cover one rejection per rule; these tests
cover what must be accepted right up to each limit, and the writer/reader agreement.
"""

from __future__ import annotations

import json
from typing import Any

import nacl.signing
import pytest

from gage.format import strictjson
from gage.format.errors import MalformedError
from gage.format.keys import key_text, parse_key
from gage.format.keys.file import KeyFile
from gage.format.manifest import (
    KINDS,
    MANIFEST_LIMIT,
    MAX_CHAIN,
    MAX_FILES,
    MAX_RECIPIENTS,
    FileEntry,
    Hop,
    Manifest,
    Party,
    bundle_id,
    check_path,
)

KEY = bytes(nacl.signing.SigningKey(b"\x01" * 32).verify_key)
OTHER = bytes(nacl.signing.SigningKey(b"\x02" * 32).verify_key)
H = "ab" * 32
ME = Party(key=KEY, name="alice")


def base(**changes: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "gage": 1,
        "kind": "share",
        "created": "2026-01-31T12:00:00Z",
        "nonce": "0" * 32,
        "sender": {"key": key_text(KEY), "name": "alice"},
        "thread": None,
        "parent": None,
        "to": [],
        "subject": None,
        "files": [],
        "chain": [],
    }
    obj.update(changes)
    return obj


def parse(obj: dict[str, Any]) -> Manifest:
    return Manifest.parse(strictjson.dumps(obj))


def test_build_writes_the_canonical_form_and_parses_back() -> None:
    m = Manifest.build(
        kind="question",
        sender=ME,
        files=[FileEntry("b.txt", 1, H), FileEntry("a/x", 2, H)],
        nonce="f" * 32,
        created="2026-01-31T12:00:00Z",
        to=[Party(key=OTHER, name="bob")],
        subject="ünï",
    )
    assert m.raw == json.dumps(json.loads(m.raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert "ünï".encode() in m.raw  # UTF-8, not \\u escapes
    assert [f.path for f in m.files] == ["a/x", "b.txt"]  # files sorted by path
    again = Manifest.parse(m.raw)
    assert again == m
    assert m.id == bundle_id(m.raw)
    assert m.total_size == 3
    assert m.thread_root == m.id


def test_reader_keeps_noncanonical_bytes_and_ids_them_as_given() -> None:
    canonical = strictjson.dumps(base())
    spaced = json.dumps(base(), indent=1).encode()
    a, b = Manifest.parse(canonical), Manifest.parse(spaced)
    assert b.raw == spaced
    assert a.kind == b.kind and a.sender == b.sender
    assert a.id != b.id, "the id is over the exact bytes, never a re-serialisation"


def test_writer_refuses_what_the_reader_refuses() -> None:
    with pytest.raises(MalformedError):
        Manifest.build(kind="answer", sender=ME, files=[], nonce="0" * 32)
    with pytest.raises(MalformedError):
        Manifest.build(kind="share", sender=ME, files=[FileEntry("../x", 1, H)], nonce="0" * 32)
    with pytest.raises(MalformedError):
        Manifest.build(kind="share", sender=ME, files=[], nonce="short")


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_as_a_reply(kind: str) -> None:
    m = parse(base(kind=kind, thread=H, parent="cd" * 32))
    assert m.kind == kind and m.thread_root == H and m.parent == "cd" * 32


@pytest.mark.parametrize("kind", ["share", "question", "review-request"])
def test_kinds_that_may_start_a_thread(kind: str) -> None:
    assert parse(base(kind=kind)).parent is None


def test_exact_limits_are_accepted() -> None:
    parse(base(subject="s" * 1000))
    parse(base(sender={"key": key_text(KEY), "name": "n" * 200}))
    parse(base(to=[{"key": key_text(OTHER), "name": f"r{i}"} for i in range(MAX_RECIPIENTS)]))
    hop = {"key": key_text(OTHER), "name": "bob", "bundle": H, "kind": "ack", "created": "2026-01-31T12:00:00Z"}
    m = parse(base(chain=[hop] * MAX_CHAIN))
    assert m.chain[0] == Hop(key=OTHER, name="bob", bundle=H, kind="ack", created="2026-01-31T12:00:00Z")
    parse(base(files=[{"path": "x", "size": (1 << 53) - 1, "sha256": H}]))


def test_one_over_each_count_limit_is_rejected() -> None:
    with pytest.raises(MalformedError) as info:
        parse(base(to=[{"key": key_text(OTHER), "name": "r"}] * (MAX_RECIPIENTS + 1)))
    assert info.value.field == "to"
    files = [{"path": f"f{i}", "size": 0, "sha256": H} for i in range(MAX_FILES + 1)]
    with pytest.raises(MalformedError) as info:
        parse(base(files=files))
    assert info.value.field == "files"


def test_max_files_is_accepted() -> None:
    files = [{"path": f"f{i:05d}", "size": 0, "sha256": H} for i in range(MAX_FILES)]
    assert len(parse(base(files=files)).files) == MAX_FILES


def test_manifest_size_cap_boundary() -> None:
    raw = strictjson.dumps(base(subject=""))
    # Pad with trailing white space (valid JSON) to exactly the cap, then one byte more.
    assert Manifest.parse(raw + b" " * (MANIFEST_LIMIT - len(raw))).kind == "share"
    with pytest.raises(MalformedError, match="over the limit"):
        Manifest.parse(raw + b" " * (MANIFEST_LIMIT - len(raw) + 1))


@pytest.mark.parametrize(
    "path",
    [
        "a",
        "a/b/c.txt",
        ".hidden",
        "a..b",
        "...x",
        "日本語/ファイル.txt",
        "x" * 255,
        "é" * 127,  # 254 bytes in UTF-8
        "/".join(["d" * 200] * 5) + "/" + "e" * 19,  # 1024 characters
        "with space/inside name.txt",
    ],
)
def test_paths_accepted(path: str) -> None:
    assert check_path(path, "p") == path


@pytest.mark.parametrize(
    "path",
    [
        "é" * 128,  # 256 bytes in UTF-8 though 128 characters
        "a\u0000b",
        "a\u2028b",
        "trailing ",
        "nul\x7f",
        "a/./b",
        "CON:",
    ],
)
def test_paths_rejected(path: str) -> None:
    with pytest.raises(MalformedError) as info:
        check_path(path, "files[0].path")
    assert info.value.field == "files[0].path"


def test_case_folding_catches_non_ascii_collisions() -> None:
    with pytest.raises(MalformedError, match="differ in more than case"):
        parse(base(files=[{"path": "Straße", "size": 0, "sha256": H}, {"path": "STRASSE", "size": 0, "sha256": H}]))


def test_file_inside_file_is_caught_case_insensitively() -> None:
    with pytest.raises(MalformedError, match="inside another listed file"):
        parse(base(files=[{"path": "Docs", "size": 0, "sha256": H}, {"path": "docs/a", "size": 0, "sha256": H}]))


def test_folder_and_sibling_file_with_a_shared_prefix_are_fine() -> None:
    m = parse(base(files=[{"path": "a", "size": 0, "sha256": H}, {"path": "ab/c", "size": 0, "sha256": H}]))
    assert len(m.files) == 2


# --- strict JSON ---------------------------------------------------------------------


def test_strictjson_dumps_is_sorted_compact_utf8() -> None:
    assert strictjson.dumps({"b": 1, "a": ["é", None, True]}) == '{"a":["é",null,true],"b":1}'.encode()


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_strictjson_dumps_refuses_nan(value: float) -> None:
    with pytest.raises(ValueError):
        strictjson.dumps({"x": value})


def test_strictjson_limit_is_inclusive() -> None:
    assert strictjson.loads(b"[1]", limit=3) == [1]
    with pytest.raises(MalformedError, match="over the limit"):
        strictjson.loads(b"[1] ", limit=3)


@pytest.mark.parametrize("raw", [b"-Infinity", b'{"a":-NaN}', b'{"a":1,"a":1}', b"1.0", b'"\\udc00"', b"\xef\xbb\xbf1"])
def test_strictjson_rejects(raw: bytes) -> None:
    with pytest.raises(MalformedError):
        strictjson.loads(raw, limit=100)


def test_strictjson_accepts_escaped_surrogate_pairs() -> None:
    """A *paired* surrogate escape is a real character (U+1F600), not a lone surrogate."""
    assert strictjson.loads(b'"\\ud83d\\ude00"', limit=100) == "\U0001f600"


# --- key text and key files ------------------------------------------------------------


def test_key_text_round_trip() -> None:
    text = key_text(KEY)
    assert text == "ed25519:" + KEY.hex() and len(text) == 8 + 64
    assert parse_key(text) == KEY


@pytest.mark.parametrize(
    "text",
    ["ED25519:" + "a" * 64, "ed25519:" + "A" * 64, "ed25519:" + "a" * 63, "ed25519:" + "a" * 65, "ed25519: " + "a" * 64, "a" * 64, None, 5],
)
def test_bad_key_text(text: Any) -> None:
    with pytest.raises(MalformedError):
        parse_key(text)


def test_key_file_round_trip_and_rules() -> None:
    kf = KeyFile(key=KEY, name="alice ✓")
    data = kf.to_bytes()
    assert data.endswith(b"\n")
    assert json.loads(data) == {"gage-key": 1, "key": key_text(KEY), "name": "alice ✓"}
    assert KeyFile.parse(data) == kf
    for bad in (
        b'{"gage-key":2,"key":"' + key_text(KEY).encode() + b'","name":"a"}',
        b'{"gage-key":1,"key":"' + key_text(KEY).encode() + b'","name":"a","trusted":true}',
        b'{"gage-key":1,"key":"ed25519:00","name":"a"}',
        b'{"gage-key":1,"key":"' + key_text(KEY).encode() + b'","name":"' + b"n" * 201 + b'"}',
        b'{"gage-key":1,"gage-key":1,"key":"' + key_text(KEY).encode() + b'","name":"a"}',
        b"[]",
    ):
        with pytest.raises(MalformedError):
            KeyFile.parse(bad, path="k.json")
