"""The house's shape is a checked contract (docs/architecture.md).

import-linter checks the layers (`lint-imports`, run by .ci/run, with the contract in
pyproject.toml). These tests check what it does not: no import cycle anywhere among gage's
modules, not even inside one layer, with function-level imports and imports under
TYPE_CHECKING counted (a type is a dependency too); no private name imported from another
package; few modules at the top; one idea a module, so past 400 lines a module's docstring
says why it is long (and none passes 800); no comment that cites an issue
number where it should say why. Every check is shown able to fail.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import gage

ROOT = Path(gage.__file__).parent
# One idea a module: a module past LONG lines says why in its docstring, in a paragraph that
# starts "Long because" (docs/architecture.md, "Sizes"); none grows past HARD_LIMIT, whatever it says.
LONG = 400
HARD_LIMIT = 800
LONG_MARKER = "Long because"
# Folders whose long modules need not say why yet, relative to gage/: none.
MAY_RUN_LONG: tuple[str, ...] = ()

# A comment or docstring says why in words: "issue 28" sends the reader to a tracker that may
# not be there. Any text file of the package counts (modules, the interface's stylesheet).
ISSUE_NUMBER = re.compile(r"\bissues? #?[0-9]+", re.IGNORECASE)
# Folders still allowed to cite one, relative to gage/: none.
MAY_CITE_ISSUES: tuple[str, ...] = ()


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(p, root): p for p in root.rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterable[tuple[str, list[str], int]]:
    """(module imported, names taken from it, line) for every import in the file, at any depth."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, [a.name for a in node.names], node.lineno


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the gage modules it imports: `from pkg import mod` counts as importing `pkg.mod`."""
    modules = _modules(root)
    top = root.name
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for target, names, _line in _imports(name, path, modules):
            if target != top and not target.startswith(top + "."):
                continue
            found = {f"{target}.{n}" for n in names if f"{target}.{n}" in modules}
            if len(found) < len(names) or not names:
                found.add(target)
            for t in found:
                while t not in modules and "." in t:
                    t = t.rpartition(".")[0]
                if t in modules and t != name:
                    graph[name].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_no_import_cycle_among_gages_modules() -> None:
    found = cycles(import_graph(ROOT))
    assert found == [], "import cycles (function-level and TYPE_CHECKING imports count):\n" + "\n".join(map(str, found))


def _probe_package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "gage"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_the_cycle_check_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    root = _probe_package(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "",
            "low/a.py": "def f():\n    from gage.high import b\n    return b\n",
            "high/__init__.py": "",
            "high/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..low.a import f\n",
            "other.py": "from gage import low\n",
        },
    )
    assert cycles(import_graph(root)) == [["gage.high.b", "gage.low.a"]]


def test_gage_has_few_modules_at_its_top() -> None:
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(top) <= 8, top
    packages = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").exists())
    assert {"format", "bundle", "home", "trust", "inbox", "carriers", "cli", "tui"} <= set(packages)


def private_imports(root: Path) -> list[str]:
    """`from gage.x.y import _name` (or `gage.x.y._name`) across top-level packages."""
    modules = _modules(root)
    top = root.name
    offenders = []
    for name, path in modules.items():
        mine = name.split(".")[1] if "." in name else ""
        for target, names, line in _imports(name, path, modules):
            if not target.startswith(top + "."):
                continue
            theirs = target.split(".")[1]
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            private += [p for p in target.split(".") if p.startswith("_") and not p.startswith("__")]
            if private and theirs != mine:
                offenders.append(f"{path.relative_to(root)}:{line} takes {private} from {target}")
    return offenders


def test_no_private_name_is_imported_across_packages() -> None:
    assert private_imports(ROOT) == []


def test_the_private_import_check_can_fail(tmp_path: Path) -> None:
    root = _probe_package(tmp_path, {"__init__.py": "", "a/__init__.py": "", "a/m.py": "_x = 1\n", "b.py": "from gage.a.m import _x\n"})
    assert private_imports(root) == ["b.py:1 takes ['_x'] from gage.a.m"]


def unexplained_long_modules(root: Path, exempt: Iterable[str] = ()) -> dict[str, str]:
    """Modules past the hard limit, and modules past LONG whose docstring does not say why."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if n > HARD_LIMIT:
            found[rel] = f"{n} lines, over {HARD_LIMIT}: split it by what belongs together"
        elif n > LONG and not any(rel.startswith(e) for e in exempt):
            doc = ast.get_docstring(ast.parse(text)) or ""
            if not any(line.strip().startswith(LONG_MARKER) for line in doc.splitlines()):
                found[rel] = f"{n} lines, and its docstring has no paragraph starting {LONG_MARKER!r}"
    return found


def test_a_long_module_says_why_it_is_long() -> None:
    assert unexplained_long_modules(ROOT, MAY_RUN_LONG) == {}


def test_the_long_module_check_can_fail(tmp_path: Path) -> None:
    body = "x = 1\n" * (LONG + 1)
    root = _probe_package(
        tmp_path,
        {
            "__init__.py": "",
            "short.py": "x = 1\n",
            "silent.py": '"""One idea."""\n' + body,
            "said.py": '"""One idea.\n\nLong because it is one idea.\n"""\n' + body,
            "said_elsewhere.py": '"""One idea."""\n# Long because of a comment, not the docstring\n' + body,
            "huge.py": '"""Huge.\n\nLong because.\n"""\n' + "x = 1\n" * HARD_LIMIT,
            "cli/c.py": body,
        },
    )
    got = unexplained_long_modules(root, ("cli/",))
    assert sorted(got) == ["huge.py", "said_elsewhere.py", "silent.py"]
    assert "over 800" in got["huge.py"]
    assert "cli/c.py" in unexplained_long_modules(root)


def issue_citations(root: Path, exempt: Iterable[str] = ()) -> list[str]:
    """`path:line` of every line in the package's text files that cites an issue by number."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.suffix in {".py", ".tcss", ".md"}):
        rel = path.relative_to(root).as_posix()
        if any(rel.startswith(e) for e in exempt):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ISSUE_NUMBER.search(line):
                found.append(f"{rel}:{n}")
    return found


def test_no_comment_cites_an_issue_number() -> None:
    assert issue_citations(ROOT, MAY_CITE_ISSUES) == []


def test_the_issue_citation_check_can_fail(tmp_path: Path) -> None:
    root = _probe_package(
        tmp_path,
        {
            "__init__.py": '"""Fast (Issue 28)."""\n',
            "a/m.py": "x = 1  # see issues 19 and 29\nissued = 3  # an issue, no number\n",
            "a/look.tcss": "/* resized (issue #27) */\n",
            "cli/c.py": "# issue 9\n",
        },
    )
    assert issue_citations(root, ("cli/",)) == ["__init__.py:1", "a/look.tcss:1", "a/m.py:1"]
    assert "cli/c.py:1" in issue_citations(root)


def test_the_import_contracts_hold() -> None:
    """The same check CI runs: import-linter's contracts from pyproject.toml (the layers, the
    libraries, the carriers' independence; tests/test_layering.py shows each can fail)."""
    import tomllib

    count = len(tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"])
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], cwd=ROOT.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{count} kept, 0 broken" in done.stdout and count >= 8
