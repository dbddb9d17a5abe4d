"""Where an implementation written from spec/ alone disagreed with gage (issue 9, class 7).

Each test here failed before its fix. The vectors that let an outside implementation
check the same points are exercised in test_spec_agree_vectors.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from gage import bundle as bundle_mod
from gage.format import strictjson
from gage.format.errors import GageError, MalformedError
from gage.format.keys import KEYFILE_LIMIT, key_text
from gage.format.keys.file import KeyFile
from gage.format.manifest import Manifest, check_path
from gage.format.sanitize import looks_binary, visible
from gage.home.identity import load_key_file
from gage.home.layout import Home
from gage.inbox import send, store

KEY = bytes(range(32))
H = "ab" * 32


def manifest(**changes: object) -> bytes:
    obj: dict[str, object] = {
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
    return strictjson.dumps(obj)


def malformed(raw: bytes) -> MalformedError:
    with pytest.raises(MalformedError) as info:
        Manifest.parse(raw)
    return info.value


# --- created: ASCII digits only ------------------------------------------------------


@pytest.mark.parametrize(
    "created",
    [
        "\u0662\u0660\u0662\u0666-01-31T12:00:00Z",  # Arabic-Indic digits for the year
        "\uff12\uff10\uff12\uff16-01-31T12:00:00Z",  # full-width digits
        "2026-01-31T1\u0968:00:00Z",  # one Devanagari digit in the hour
    ],
)
def test_created_with_non_ascii_digits_is_malformed(created: str) -> None:
    """Python's \\d and strptime accept any Unicode digit; the spec's YYYY means 0-9."""
    assert malformed(manifest(created=created)).field == "created"
    hop = {"key": key_text(KEY), "name": "a", "bundle": H, "kind": "share", "created": created}
    assert malformed(manifest(chain=[hop])).field == "chain[0].created"


@pytest.mark.parametrize("created", ["2026-12-31T23:59:60Z", "0000-01-01T00:00:00Z", "2026-01-31T24:00:00Z"])
def test_created_has_no_leap_second_no_year_zero_no_hour_24(created: str) -> None:
    assert malformed(manifest(created=created)).field == "created"


def test_created_boundaries_that_are_real_times() -> None:
    for created in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2024-02-29T00:00:00Z"):
        assert Manifest.parse(manifest(created=created)).created == created


# --- key files -------------------------------------------------------------------------


def test_key_file_over_the_cap_is_refused_even_when_the_excess_is_newlines(tmp_path: Path) -> None:
    """The cap is on the file: trailing newlines do not buy a bigger one."""
    data = KeyFile(key=KEY, name="alice").to_bytes()
    exact = data + b"\n" * (KEYFILE_LIMIT - len(data))
    assert len(exact) == KEYFILE_LIMIT
    assert KeyFile.parse(exact).key == KEY
    over = exact + b"\n"
    with pytest.raises(MalformedError, match="over the limit"):
        KeyFile.parse(over)
    p = tmp_path / "k.json"
    p.write_bytes(data + b"\n" * 100_000)
    with pytest.raises(MalformedError, match="over the limit"):
        load_key_file(p)


@pytest.mark.parametrize("version", [b"true", b'"1"', b"2", b"0"])
def test_key_file_version_must_be_the_integer_1(version: bytes) -> None:
    """`true == 1` in Python: a boolean is not the version number."""
    data = b'{"gage-key":' + version + b',"key":"' + key_text(KEY).encode() + b'","name":"a"}\n'
    with pytest.raises(MalformedError) as info:
        KeyFile.parse(data)
    assert info.value.field == "gage-key"


def test_key_file_with_crlf_or_no_newline_is_read() -> None:
    body = b'{"gage-key":1,"key":"' + key_text(KEY).encode() + b'"}'
    for data in (body, body + b"\r\n", b"  " + body + b"\n\n"):
        assert KeyFile.parse(data) == KeyFile(key=KEY, name="")


# --- text or binary (spec/frame.md) ----------------------------------------------------


def test_a_short_file_with_invalid_utf8_at_its_end_is_binary() -> None:
    """The old rule forgave an error in the last 4 bytes of any sample, even a whole file."""
    assert looks_binary(b"caf\xe9\n")
    assert looks_binary(b"ok\xff")
    assert looks_binary("caf\u00e9".encode()[:-1])  # a file that ends in a cut character


def test_an_invalid_byte_near_the_8k_edge_is_binary() -> None:
    sample = b"a" * 8189 + b"\xff" + b"aa"
    assert len(sample) == 8192
    assert looks_binary(sample, more=True)


def test_a_character_cut_at_the_8k_edge_is_text_only_when_the_file_goes_on() -> None:
    sample = b"a" * 8190 + "\u20ac".encode()[:2]  # the euro sign, cut after 2 of its 3 bytes
    assert not looks_binary(sample, more=True)
    assert looks_binary(sample, more=False)


# --- import and verify: the same stage for the same manifest.sig --------------------------


def _bundle_dir(home: Home, tmp_path: Path) -> Path:
    src = tmp_path / "a.txt"
    src.write_text("hello\n")
    _m, dest = send.create(home, [src], kind="share")
    d = tmp_path / "carried" / dest.name
    shutil.copytree(dest, d)
    return d


def _spoil_signature(d: Path, how: str, tmp_path: Path) -> None:
    sig = d / "manifest.sig"
    good = sig.read_bytes()
    sig.unlink()
    if how == "symlink":
        real = tmp_path / "real.sig"
        real.write_bytes(good)
        sig.symlink_to(real)
    elif how == "huge":
        sig.write_bytes(good + b"\x00" * (1 << 20))
    elif how == "fifo":
        os.mkfifo(sig)
    elif how == "directory":
        sig.mkdir()
    elif how == "65-bytes":
        sig.write_bytes(good + b"\x00")
    elif how == "empty":
        sig.write_bytes(b"")
    else:
        assert how == "absent"


@pytest.mark.parametrize("how", ["symlink", "huge", "fifo", "directory", "65-bytes", "empty", "absent"])
def test_import_reports_the_stage_verify_reports_for_a_bad_signature_file(
    how: str, make_home: Callable[[str], Home], tmp_path: Path
) -> None:
    me, bob = make_home("me"), make_home("bob")
    d = _bundle_dir(bob, tmp_path)
    _spoil_signature(d, how, tmp_path)
    checked = bundle_mod.check(d)
    verify_error = checked.first_error()
    assert verify_error is not None and verify_error.path == "manifest.sig"
    try:
        res = store.import_bundle(me, d)
    except GageError as exc:
        import_stage = exc.stage
        assert list(me.state_dir("pending").iterdir()) == []
    else:
        assert res.check is not None
        first = res.check.first_error()
        assert first is not None and first.path == "manifest.sig"
        import_stage = first.stage
    assert import_stage == verify_error.stage, (how, import_stage, verify_error)


# --- paths: bytes, not characters, so the OS can always write them ------------------------


def test_a_path_of_1024_characters_but_4096_bytes_is_malformed() -> None:
    """Linux refuses any path of 4096 bytes or more (PATH_MAX); the spec's limit is in bytes."""
    emoji = "\U0001f600" * 62  # 248 bytes: a legal component
    path = "/".join([emoji] * 17)[:1024]
    assert len(path) == 1024 and len(path.encode()) > 4000
    with pytest.raises(MalformedError, match="1024 bytes") as info:
        check_path(path, "files[0].path")
    assert info.value.field == "files[0].path"


def test_a_path_of_exactly_1024_bytes_travels(make_home: Callable[[str], Home], tmp_path: Path) -> None:
    comp = "\u00e9" * 127 + "x"  # 255 bytes
    rel = "/".join([comp] * 3 + ["\u00e9" * 126 + "xy", "z"])  # 765 + 254 + 1 + 4 slashes
    assert len(rel.encode()) == 1024
    me, bob = make_home("me"), make_home("bob")
    src = tmp_path / "src"
    (src / rel).parent.mkdir(parents=True)
    (src / rel).write_text("deep\n")
    # A folder contributes its own name: bundle the first component's folder from inside src.
    m, dest = send.create(bob, [src / comp], kind="share")
    assert [f.path for f in m.files] == [rel]
    res = store.import_bundle(me, dest)
    assert res.check is not None and res.check.ok, res.check.problems


# --- Unicode: one pinned version, whatever the Python -------------------------------------


def _newer_unicode(monkeypatch: pytest.MonkeyPatch, assigned: str) -> None:
    """Pretend the running Python knows a later Unicode, in which `assigned` is a letter."""
    real = unicodedata.category

    def category(ch: str) -> str:
        return "Lo" if ch in assigned else real(ch)

    monkeypatch.setattr(unicodedata, "category", category)


KAWI_A = "\U00011f04"  # assigned in Unicode 15.0 (Python 3.12); unassigned in 14.0 (Python 3.11)


def test_a_path_is_judged_by_unicode_14_whatever_the_python(monkeypatch: pytest.MonkeyPatch) -> None:
    _newer_unicode(monkeypatch, KAWI_A)
    with pytest.raises(MalformedError, match="Unicode 14.0"):
        check_path(f"a{KAWI_A}.txt", "files[0].path")


def test_a_value_is_shown_by_unicode_14_whatever_the_python(monkeypatch: pytest.MonkeyPatch) -> None:
    _newer_unicode(monkeypatch, KAWI_A)
    assert visible(f"x{KAWI_A}y") == "x\\U00011f04y"


# --- strict JSON: depth and integers -----------------------------------------------------


def test_nesting_counts_containers_and_32_is_the_most() -> None:
    assert strictjson.loads(b"[" * 32 + b"]" * 32, limit=1000) is not None
    assert strictjson.loads(b"[" * 32 + b"1" + b"]" * 32, limit=1000) is not None
    for raw in (b"[" * 33 + b"]" * 33, b'{"a":' * 33 + b"1" + b"}" * 33, b'{"a":' * 32 + b"[]" + b"}" * 32):
        with pytest.raises(MalformedError, match="nested too deeply"):
            strictjson.loads(raw, limit=1000)


def test_integers_are_within_plus_or_minus_2_53_minus_1() -> None:
    top = (1 << 53) - 1
    assert strictjson.loads(str(top).encode(), limit=100) == top
    assert strictjson.loads(str(-top).encode(), limit=100) == -top
    for raw in (str(top + 1).encode(), str(-top - 1).encode(), b"1" * 17, b"9" * 5000):
        with pytest.raises(MalformedError, match="out of range"):
            strictjson.loads(raw, limit=10_000)


def test_integer_length_does_not_depend_on_pythons_digit_limit() -> None:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # what PYTHONINTMAXSTRDIGITS=0 does
    try:
        raw = manifest(files=[{"path": "a", "size": 1, "sha256": H}]).replace(b'"size":1', b'"size":' + b"9" * 5000)
        err = malformed(raw)
    finally:
        sys.set_int_max_str_digits(old)
    assert err.field is None and "out of range" in err.message


def test_a_size_of_2_53_fails_at_the_json_layer() -> None:
    err = malformed(manifest(files=[{"path": "a", "size": 1 << 53, "sha256": H}]))
    assert err.field is None and "out of range" in err.message


# --- a path inside a listed file: the entry that lies inside is named ---------------------


def test_a_path_inside_a_file_names_the_entry_below() -> None:
    f = [{"path": "a", "size": 0, "sha256": H}, {"path": "A/b", "size": 0, "sha256": H}]
    assert malformed(manifest(files=f)).field == "files[1].path"
    assert malformed(manifest(files=f[::-1])).field == "files[0].path"


# --- what `gage read` prints: backslashes, and bytes that are not UTF-8 --------------------


def _read_pending(make_home: Callable[[str], Home], tmp_path: Path, gage, files: dict[str, bytes]) -> list[str]:
    me, bob = make_home("me"), make_home("bob")
    src = tmp_path / "src"
    src.mkdir()
    for name, data in files.items():
        (src / name).write_bytes(data)
    m, dest = send.create(bob, sorted(src.iterdir()), kind="share")
    store.import_bundle(me, dest)
    r = gage(me, "read", m.id, "--pending")
    assert r.code == 0, r.err
    return r.out.splitlines()


def test_a_literal_backslash_is_told_apart_from_an_escape(make_home, tmp_path: Path, gage) -> None:
    lines = _read_pending(make_home, tmp_path, gage, {"a.txt": b"real ESC: \x1b, typed: \\x1b, path C:\\dir\n"})
    assert "| real ESC: \\x1b, typed: \\\\x1b, path C:\\\\dir" in lines


def test_invalid_utf8_after_the_first_8k_is_shown_as_a_byte_escape(make_home, tmp_path: Path, gage) -> None:
    """`\\xff` would look like the character U+00FF shown as an escape; `\\udcff` is never a character."""
    data = b"a" * 9000 + b"\n\xff\xc3\x85 and \xc2\x85\n"
    lines = _read_pending(make_home, tmp_path, gage, {"a.txt": data})
    assert "| \\udcff\u00c5 and \\x85" in lines
    assert looks_binary(data[:8192], more=True) is False


def test_a_character_cut_at_the_preview_limit_is_left_for_the_note(make_home, tmp_path: Path, gage) -> None:
    from gage.trust.frame import PREVIEW_LIMIT

    data = b"a" * (PREVIEW_LIMIT - 1) + "\u20ac".encode() + b"tail\n"
    lines = _read_pending(make_home, tmp_path, gage, {"a.txt": data})
    shown = [line for line in lines if line.startswith("| ")]
    assert shown == ["| " + "a" * (PREVIEW_LIMIT - 1)]
    note = next(line for line in lines if " note: " in line)
    assert f"note: {len(data) - (PREVIEW_LIMIT - 1)} more bytes" in note


def test_a_short_latin1_file_is_binary_in_the_frame(make_home, tmp_path: Path, gage) -> None:
    lines = _read_pending(make_home, tmp_path, gage, {"latin1.txt": b"caf\xe9\n"})
    assert any(line.endswith('file "latin1.txt" (5 bytes, binary): not printed ----') for line in lines), lines


# --- a file name that is not UTF-8, in --json ---------------------------------------------


def test_verify_json_of_a_non_utf8_name_is_strict_json(make_home: Callable[[str], Home], tmp_path: Path, gage) -> None:
    bob = make_home("bob")
    d = _bundle_dir(bob, tmp_path)
    fd = os.open(os.fsencode(d / "payload") + b"/stray-\xff\xfe.txt", os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(fd)
    r = gage(None, "verify", str(d), "--json")
    assert r.code == 4
    doc = strictjson.loads(r.out.encode(), limit=1 << 20)  # gage's own strict reader takes it
    assert [p["path"] for p in doc["problems"]] == ["payload/stray-\ufffd\ufffd.txt"]
    assert json.loads(r.out) == doc
    # The text form shows each byte as an escape, as `gage read` does.
    r = gage(None, "verify", str(d))
    assert "payload/stray-\\udcff\\udcfe.txt" in r.err
