"""The vectors of issue 9, class 7, checked against the code: strict-json.json, key-files.json,
paths.json, frame.json, and the signature-file cases of bundles.json.

Like test_vectors_bundle.py, these read the committed JSON; one test also checks that the
generator still writes exactly those files, so a vector cannot drift from its generator.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gage import bundle as bundle_mod
from gage.format import sanitize, strictjson
from gage.format.errors import GageError, MalformedError
from gage.format.keys import parse_key
from gage.format.keys.file import KeyFile
from gage.format.manifest import check_path, fold_path
from gage.home.identity import load_key_file
from gage.home.layout import Home
from gage.inbox import store

VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors"


def _load(name: str) -> dict[str, Any]:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


STRICT = _load("strict-json.json")
KEYFILES = _load("key-files.json")
PATHS = _load("paths.json")
FRAME = _load("frame.json")
BUNDLES = _load("bundles.json")


def _bytes(case: dict[str, Any], stem: str) -> bytes:
    """`<stem>_b64`, or a `<stem>_parts` recipe: prefix + repeat * repeat_count + suffix."""
    if f"{stem}_b64" in case:
        return base64.b64decode(case[f"{stem}_b64"])
    p = case[f"{stem}_parts"]
    return base64.b64decode(p["prefix_b64"]) + p["repeat"].encode("ascii") * p["repeat_count"] + base64.b64decode(p["suffix_b64"])


# --- the generator ---------------------------------------------------------------------


def test_the_generator_writes_exactly_the_committed_vectors() -> None:
    if unicodedata.unidata_version != sanitize.UNICODE_VERSION:
        pytest.skip("the vectors are generated with Python 3.11's unicodedata (Unicode 14.0.0)")
    spec = importlib.util.spec_from_file_location("gage_generate_vectors", VECTORS / "generate.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for name, text in gen.render().items():
        assert (VECTORS / name).read_text(encoding="utf-8") == text, f"{name} differs from what generate.py writes"


# --- the pinned Unicode version -----------------------------------------------------------


def _ranges(items: list[str]) -> tuple[tuple[int, int], ...]:
    return tuple((int(a, 16), int(b, 16)) for a, b in (i.split("-") for i in items))


def test_the_code_table_is_the_vector_table() -> None:
    assert PATHS["unicode_version"] == sanitize.UNICODE_VERSION == "14.0.0"
    assert sanitize.PLAIN_RANGES == _ranges(PATHS["plain_ranges"])


def test_no_bidi_control_is_plain() -> None:
    assert [cp for cp in sorted(sanitize._BIDI) if sanitize.is_plain(chr(cp))] == []


def test_the_table_is_unicode_14_categories() -> None:
    if unicodedata.unidata_version != "14.0.0":
        pytest.skip("needs Python 3.11's unicodedata")
    bad = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
    wrong = [cp for cp in range(0x110000) if sanitize.is_plain(chr(cp)) != (unicodedata.category(chr(cp)) not in bad)]
    assert wrong == []


PROPERTIES_SCRIPT = r"""
import hashlib, importlib.util, json, sys, unicodedata
spec = importlib.util.spec_from_file_location("s", sys.argv[1])
s = importlib.util.module_from_spec(spec); spec.loader.exec_module(s)
h = hashlib.sha256()
for start, end in s.PLAIN_RANGES:
    for cp in range(start, end + 1):
        c = chr(cp)
        nfd = unicodedata.normalize("NFD", c)
        f = [f"{cp:04X}", " ".join(f"{ord(x):04X}" for x in nfd),
             " ".join(f"{ord(x):04X}" for x in unicodedata.normalize("NFC", nfd)),
             " ".join(f"{ord(x):04X}" for x in c.casefold()), str(unicodedata.combining(c))]
        h.update((";".join(f) + "\n").encode("ascii"))
probe = ["\U00011f04", "\U0002ebf0", "\U0001fae0", "\u00ad", "a"]
print(json.dumps({"unicode": unicodedata.unidata_version, "digest": h.hexdigest(),
                  "plain": [s.is_plain(c) for c in probe], "visible": s.visible("".join(probe))}))
"""


def _properties(python: str) -> dict[str, Any]:
    out = subprocess.run(
        [python, "-c", PROPERTIES_SCRIPT, str(Path(sanitize.__file__))], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(out.stdout)


def test_this_pythons_unicode_agrees_on_every_plain_character() -> None:
    """NFD, NFC, case folding and combining classes of every plain (14.0) character are
    what Unicode 14.0 says, on this Python whatever its Unicode version: Unicode's
    stability policies promise it, and this checks it, so a path means the same here."""
    got = _properties(sys.executable)
    assert got["digest"] == PATHS["properties_sha256"], got["unicode"]
    assert got["plain"] == [False, False, True, False, True]
    assert got["visible"] == "\\U00011f04\\U0002ebf0\U0001fae0\\xada"


def _other_pythons() -> list[str]:
    """Interpreters to compare with: GAGE_TEST_PYTHONS (paths, separated by os.pathsep), else
    python3.11 .. python3.14 on PATH that actually run."""
    named = [p for p in os.environ.get("GAGE_TEST_PYTHONS", "").split(os.pathsep) if p]
    found = named or [p for v in ("3.11", "3.12", "3.13", "3.14") if (p := shutil.which(f"python{v}"))]
    ok = []
    for p in found:
        try:
            if subprocess.run([p, "-c", "import sys; assert sys.version_info >= (3, 11)"], capture_output=True, timeout=60).returncode == 0:
                ok.append(p)
        except OSError:
            continue
    return ok


def test_every_python_here_judges_characters_alike() -> None:
    pythons = _other_pythons()
    if not pythons:
        pytest.skip("no other Python 3.11+ found (set GAGE_TEST_PYTHONS to compare some)")
    mine = _properties(sys.executable)
    for python in pythons:
        got = _properties(python)
        assert {k: got[k] for k in ("digest", "plain", "visible")} == {k: mine[k] for k in ("digest", "plain", "visible")}, (
            python,
            got["unicode"],
        )


# --- paths -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", PATHS["accepted"], ids=lambda c: c["name"])
def test_accepted_path(case: dict[str, Any]) -> None:
    assert check_path(case["path"], "files[0].path") == case["path"]
    assert len(case["path"].encode()) == case["utf8_bytes"]


@pytest.mark.parametrize("case", PATHS["fold"], ids=lambda c: f"{c['a']}~{c['b']}")
def test_fold(case: dict[str, Any]) -> None:
    assert fold_path(case["a"]) == case["fold_a"]
    assert fold_path(case["b"]) == case["fold_b"]
    assert (fold_path(case["a"]) == fold_path(case["b"])) == case["collide"]


def _share_bundle(root: Path) -> Path:
    case = next(b for b in BUNDLES["bundles"] if b["name"] == "share")
    d = root / case["id"]
    (d / "payload").mkdir(parents=True)
    (d / "manifest.json").write_bytes(base64.b64decode(case["manifest_b64"]))
    (d / "manifest.sig").write_bytes(bytes.fromhex(case["signature_hex"]))
    for f in case["files"]:
        p = d / "payload" / f["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(base64.b64decode(f["content_b64"]))
    assert bundle_mod.check(d).ok
    return d


@pytest.mark.parametrize("case", PATHS["disk_names"], ids=lambda c: c["name_hex"])
def test_a_name_on_disk_in_json_and_in_text(case: dict[str, Any], tmp_path: Path) -> None:
    d = _share_bundle(tmp_path)
    fd = os.open(os.fsencode(d / "payload") + b"/" + bytes.fromhex(case["name_hex"]), os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(fd)
    result = bundle_mod.check(d)
    [problem] = result.problems
    assert problem.stage == "tampered"
    assert problem.to_json()["path"] == case["json_path"]
    assert strictjson.loads(json.dumps(result.to_json()).encode(), limit=1 << 20)["problems"][0]["path"] == case["json_path"]
    assert sanitize.visible(problem.path or "") == case["shown"]


# --- strict JSON -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", STRICT["cases"], ids=lambda c: c["name"])
def test_strict_json(case: dict[str, Any]) -> None:
    raw = _bytes(case, "json")
    if case["valid"]:
        assert strictjson.loads(raw, limit=1 << 20) == case["value"]
    else:
        with pytest.raises(MalformedError) as info:
            strictjson.loads(raw, limit=1 << 20)
        assert case["message_contains"] in info.value.message


# --- key files -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", KEYFILES["cases"], ids=lambda c: c["name"])
def test_key_file(case: dict[str, Any], tmp_path: Path) -> None:
    data = _bytes(case, "file")
    path = tmp_path / "k.json"
    path.write_bytes(data)
    if case["valid"]:
        for kf in (KeyFile.parse(data), load_key_file(path)):
            assert kf.key == parse_key(case["key"]) and kf.name == case["claimed_name"]
    else:
        for attempt in (lambda: KeyFile.parse(data), lambda: load_key_file(path)):
            with pytest.raises(MalformedError) as info:
                attempt()
            assert info.value.field == case["field"], info.value.message


# --- the frame ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", FRAME["text_or_binary"], ids=lambda c: c["name"])
def test_text_or_binary(case: dict[str, Any]) -> None:
    data = _bytes(case, "file")
    n = FRAME["text_sample_bytes"]
    assert n == sanitize.TEXT_SAMPLE
    assert sanitize.looks_binary(data[:n], more=len(data) > n) == (case["kind"] == "binary")


@pytest.mark.parametrize("case", FRAME["payload_lines"], ids=lambda c: c["name"])
def test_payload_lines(case: dict[str, Any]) -> None:
    from gage.trust.frame import PREVIEW_LIMIT

    assert FRAME["preview_limit_bytes"] == PREVIEW_LIMIT
    data = _bytes(case, "file")
    lines, shown = sanitize.payload_lines(data[:PREVIEW_LIMIT], more=len(data) > PREVIEW_LIMIT)
    if "lines" in case:
        assert lines == case["lines"]
    else:
        assert hashlib.sha256("\n".join(lines).encode()).hexdigest() == case["lines_sha256"]
        assert len(lines) == case["line_count"] and lines[-1] == case["last_line"]
    assert len(data) - shown == case["not_shown_bytes"]


@pytest.mark.parametrize("case", FRAME["quoted"], ids=lambda c: c["name"])
def test_quoted(case: dict[str, Any]) -> None:
    assert sanitize.quoted(case["value"]) == case["shown"]


# --- manifest.sig: the same stage from verify and from import ------------------------------------


def _spoil(d: Path, how: str, tmp_path: Path) -> None:
    sig = d / "manifest.sig"
    good = sig.read_bytes()
    sig.unlink()
    if how == "symlink":
        (tmp_path / "real.sig").write_bytes(good)
        sig.symlink_to(tmp_path / "real.sig")
    elif how == "fifo":
        os.mkfifo(sig)
    elif how == "directory":
        sig.mkdir()
    elif how == "empty":
        sig.write_bytes(b"")
    elif how == "65-bytes":
        sig.write_bytes(good + b"\x00")
    elif how == "over-cap":
        sig.write_bytes(b"\x00" * ((1 << 20) + 1))
    else:
        assert how == "absent"


@pytest.mark.parametrize("case", BUNDLES["signature_files"], ids=lambda c: c["how"])
def test_signature_file(case: dict[str, Any], tmp_path: Path, make_home: Callable[[str], Home]) -> None:
    d = _share_bundle(tmp_path / "carried")
    _spoil(d, case["how"], tmp_path)
    err = bundle_mod.check(d).first_error()
    assert err is not None and (err.stage, err.path) == (case["verify_stage"], "manifest.sig")
    assert case["message_contains"] in err.message
    home = make_home("me")
    if case["import"] == "refused":
        with pytest.raises(GageError) as info:
            store.import_bundle(home, d)
        assert info.value.stage == case["import_stage"]
        assert list(home.state_dir("pending").iterdir()) == []
    else:
        res = store.import_bundle(home, d)
        assert res.check is not None
        first = res.check.first_error()
        assert first is not None and (first.stage, first.path) == (case["import_stage"], "manifest.sig")
