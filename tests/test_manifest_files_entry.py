"""gage/format/manifest_files.py's FileEntry is a collections.namedtuple at run time (typing's
NamedTuple would load typing on every command's start-up, issue 28) and a typing.NamedTuple
for mypy. The two must have the same fields in the same order, and the entry must stay a
plain named tuple: made in C by `plain_files`, no per-entry `__dict__`."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from gage.format import manifest_files
from gage.format.manifest import FileEntry as ReExported
from gage.format.manifest_files import FileEntry, parse_files, plain_files


def _typed_fields() -> list[tuple[str, str]]:
    """The fields (name, annotation) of the NamedTuple mypy sees, read from the source."""
    tree = ast.parse(open(manifest_files.__file__, encoding="utf-8").read())
    classes = [
        c
        for block in tree.body
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
        for c in block.body
        if isinstance(c, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "NamedTuple" for b in c.bases)
    ]
    assert len(classes) == 1
    return [(f.target.id, ast.unparse(f.annotation)) for f in classes[0].body if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)]


def test_the_run_time_named_tuple_has_the_typed_fields_in_order() -> None:
    assert _typed_fields() == [("path", "str"), ("size", "int"), ("sha256", "str")]
    assert FileEntry._fields == tuple(name for name, _ in _typed_fields())
    assert ReExported is FileEntry


def test_an_entry_is_a_plain_named_tuple() -> None:
    entry = FileEntry(path="a.txt", size=3, sha256="0" * 64)
    assert entry == ("a.txt", 3, "0" * 64) and isinstance(entry, tuple)
    assert not hasattr(entry, "__dict__")  # no per-entry dict: a manifest may list 10,000
    assert repr(entry) == f"FileEntry(path='a.txt', size=3, sha256='{'0' * 64}')"
    assert entry._replace(size=4) == FileEntry("a.txt", 4, "0" * 64) and type(entry._replace(size=4)) is FileEntry
    assert entry.to_json() == {"path": "a.txt", "size": 3, "sha256": "0" * 64}


def test_the_c_made_entries_are_the_checked_ones() -> None:
    value = [{"path": f"d/f{i}.txt", "size": i, "sha256": f"{i:064x}"} for i in range(5)]
    fast = plain_files(value)
    assert fast is not None and all(type(e) is FileEntry for e in fast)
    assert fast == parse_files(value)
    assert [e.to_json() for e in fast] == value


def test_the_files_list_loads_no_typing() -> None:
    probe = "import sys, gage.format.manifest_files as m; m.FileEntry('a', 1, 'b'); print('typing' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(res.stdout.strip().lower()) is False
