"""What the `gage mcp` tools answer, called in-process (gage/mcp/answers.py needs no SDK):
the read cap, windows that open inside a character, binary files (spec/mcp.md)."""

from __future__ import annotations

import base64
import importlib.util
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from gagetest import arrive, pair

from gage.format.errors import NotFoundError, UsageError
from gage.home.layout import Home
from gage.inbox import send
from gage.mcp import answers

TOKEN = re.compile(r"==== gage frame ([0-9a-f]{16}) ====")


@pytest.fixture
def homes(make_home) -> tuple[Home, Home]:
    me, bob = make_home("me"), make_home("bob")
    pair(me, "bob", bob)
    return me, bob


def _deliver(me: Home, bob: Home, tmp: Path, files: dict[str, bytes]) -> str:
    src = tmp / "src"
    src.mkdir(exist_ok=True)
    paths = []
    for name, data in files.items():
        (src / name).write_bytes(data)
        paths.append(src / name)
    m, dest = send.create(bob, paths, kind="share")
    arrive(me, dest)
    return m.id


def test_a_read_stops_before_the_next_file_once_over_the_cap(homes, tmp_path: Path, monkeypatch) -> None:
    me, bob = homes
    bid = _deliver(me, bob, tmp_path, {f"f{i}.txt": (f"file {i} " * 10).encode() for i in range(5)})
    whole = answers.read(me, bid, pending=True)
    assert whole.count(" begin file ") == 5 and "this read stops here" not in whole
    monkeypatch.setattr(answers, "READ_CAP", 250)
    cut = answers.read(me, bid, pending=True)
    token = TOKEN.search(cut).group(1)  # type: ignore[union-attr]
    assert cut.count(f"---- payload {token} begin file ") == 2  # a file here is ~175 characters with its fences
    assert cut.count(f"---- payload {token} end file ") == 2  # a file begun is finished
    assert cut.endswith(f"---- payload {token} note: this read stops here, 3 of 5 file(s) not shown "
                        "(one read gives at most 250 characters after the frame); read_file shows any file ----")


def test_a_window_inside_a_character_starts_at_the_next_one(homes, tmp_path: Path) -> None:
    me, bob = homes
    bid = _deliver(me, bob, tmp_path, {"e.txt": ("é" * 10 + "\n").encode()})  # 2 bytes each
    text = answers.read_file(me, bid, "e.txt", offset=1, length=5, pending=True)
    assert "bytes 2 to 6" in text  # byte 1 ends the first é; a cut character at the end is left for the next window
    assert "\n| éé\n" in text
    assert '15 more bytes of "e.txt" after byte 6: read_file with offset 6' in text
    past = answers.read_file(me, bid, "e.txt", offset=10_000, pending=True)
    assert "bytes 21 to 21" in past and "| " not in past.split("==== end of gage frame")[-1]


def test_binary_files_are_named_never_printed(homes, tmp_path: Path) -> None:
    me, bob = homes
    bid = _deliver(me, bob, tmp_path, {"b.bin": b"\x00\x1b[2J" * 100})
    text = answers.read_file(me, bid, "b.bin", offset=3, pending=True)
    token = TOKEN.search(text).group(1)  # type: ignore[union-attr]
    assert text.endswith(f'---- payload {token} file "b.bin" (500 bytes, binary): not printed ----')
    assert "\x1b" not in text and "\x00" not in text


def test_bad_arguments_are_usage_errors_and_unlisted_paths_not_found(homes, tmp_path: Path) -> None:
    me, bob = homes
    bid = _deliver(me, bob, tmp_path, {"a.txt": b"a"})
    with pytest.raises(UsageError):
        answers.read_file(me, bid, "a.txt", offset=-1)
    with pytest.raises(UsageError):
        answers.read_file(me, bid, "a.txt", length=0)
    with pytest.raises(UsageError):
        answers.list_bundles(me, limit=answers.MAX_ROWS + 1)
    with pytest.raises(NotFoundError):
        answers.read_file(me, bid, "../../identity.json", pending=True)
    # Without `pending`, a pending bundle's frame says why no payload follows, and no path is looked up.
    assert "not shown: the bundle is pending" in answers.read_file(me, bid, "nope", pending=False)


def test_the_authority_summary_says_what_is_granted_or_that_nothing_is(homes) -> None:
    me, _bob = homes
    assert answers.authority_summary(me) == "This home's authority.toml grants nothing: every bundle is information only."
    me.authority_path.write_text('[[grant]]\ncontact = "nobody"\nkind = "share"\nmay = "x"\n')
    assert "has errors, so no grant applies" in answers.authority_summary(me)
    me.authority_path.write_text('[[grant]]\ncontact = "bob"\nkind = "question"\nmay = "Answer it."\n')
    said = answers.authority_summary(me)
    assert 'granted to bob for question: "Answer it.".' in said and "(reply = true)" not in said
    assert "only when that bundle's frame names it" in said


VECTORS = Path(__file__).resolve().parent.parent / "spec" / "vectors"


def test_read_file_windows_match_the_vectors(tmp_path: Path) -> None:
    doc = json.loads((VECTORS / "mcp.json").read_text(encoding="utf-8"))
    assert doc["window_cap"] == answers.WINDOW_CAP
    (tmp_path / "payload").mkdir()
    for case in doc["windows"]:
        data = base64.b64decode(case["file_b64"])
        (tmp_path / "payload" / doc["name"]).write_bytes(data)
        got = answers._window(SimpleNamespace(path=tmp_path), doc["name"], len(data), case["offset"], case["length"], doc["token"])  # type: ignore[arg-type]
        assert got[0] == case["begin"], case["name"]
        shown = [ln for ln in got[1:] if ln.startswith("| ")]
        if "lines" in case:
            assert shown == case["lines"], case["name"]
        else:
            assert len(shown) == case["line_count"], case["name"]
        rest = [ln for ln in got[1:] if not ln.startswith("| ")]
        assert rest == [case["end_fence"], *([case["note"]] if case["note"] else [])], case["name"]


def test_the_window_generator_reproduces_the_committed_file() -> None:
    spec = importlib.util.spec_from_file_location("generate_mcp", VECTORS / "generate_mcp.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.render() == (VECTORS / "mcp.json").read_text("utf-8")


def test_list_bundles_names_senders_by_fingerprint_and_200_hybrid_rows_stay_small(homes, tmp_path: Path) -> None:
    """Issue 27: an agent's context is not filled with keys. A hybrid key is 3,984 characters; a row
    carries its fingerprint (and the name the verdict allows), never the key; `verdict` keeps both."""
    from gage.format.keys.fingerprint import fingerprint

    me, bob = homes
    assert len(bob.identity.key_text) == 3984
    src = tmp_path / "n.txt"
    ids = []
    for i in range(200):
        src.write_text(f"note {i}\n")
        m, dest = send.create(bob, [src], kind="share", subject=f"note {i}")
        arrive(me, dest)
        ids.append(m.id)
    texts = answers.list_bundles(me, limit=200)
    assert len(texts) == 1
    size = len(texts[0].encode())
    assert size < 150 * 1024, size
    rows = json.loads(texts[0])["bundles"]
    assert len(rows) == 200
    for row in rows:
        assert row["sender"]["fingerprint"] == fingerprint(bob.identity.key) and row["sender"]["name"] == "bob"
        assert "key" not in row["sender"]
    assert bob.identity.key.hex()[:32] not in texts[0]
    full = json.loads(answers.verdict(me, ids[0]))["sender"]
    assert full["key"] == bob.identity.key_text and full["fingerprint"] == fingerprint(bob.identity.key)


def test_a_pending_bundle_is_shown_in_the_agents_terms_not_the_command_lines(homes, tmp_path: Path) -> None:
    """An agent asks with the tool's argument (pending=true), not the command line's `--pending`; the
    command line keeps its own words."""
    import json

    from gage.inbox.read_json import read_json
    from gage.mcp.seams import verdict_of
    from gage.trust import frame

    me, bob = homes
    bid = _deliver(me, bob, tmp_path, {"a.txt": b"a"})
    for said in (answers.read(me, bid), answers.read_file(me, bid, "a.txt"), json.loads(answers.list_files(me, bid))["payload"]["why"]):
        assert "not shown: the bundle is pending (not accepted); the same tool with pending=true shows it" in said, said
        assert "--pending" not in said and "gage read" not in said, said
    v = verdict_of(me, bid)
    assert v.state == "pending"
    cli = "\n".join(frame.render(v))
    assert "`gage read ID --pending` shows it without accepting" in cli and "pending=true" not in cli
    assert "`gage read ID --pending` shows it" in read_json(v, show_pending=False)["payload"]["why"]
