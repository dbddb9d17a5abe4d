"""Every widget call in the interface keeps markup off (the core/UI split is tests/test_layering.py).

These read the source, so a new notify/Static/Label call that would parse untrusted
markup fails here before review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gage

ROOT = Path(gage.__file__).parent


def _calls(tree: ast.AST, names: set[str]) -> list[ast.Call]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in names:
                out.append(node)
    return out


def test_every_widget_text_call_in_the_tui_has_markup_off() -> None:
    for path in (ROOT / "tui").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for call in _calls(tree, {"notify", "Static", "Label"}):
            kw = {k.arg: k.value for k in call.keywords}
            off = isinstance(kw.get("markup"), ast.Constant) and kw["markup"].value is False
            assert off, f"{path.name}:{call.lineno}: {ast.unparse(call.func)}(...) without markup=False"


def test_the_tui_never_parses_text_as_markup_or_ansi() -> None:
    for path in (ROOT / "tui").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        for risky in ("from_ansi", "Text.from_markup", "render_markup", "markup=True"):
            assert risky not in source, f"{path.name} uses {risky}"
        # Content.from_markup is allowed only in safe.trusted (values substituted as $variables) and help.
        if path.name not in ("safe.py",):
            assert "Content.from_markup" not in source, f"{path.name}: use safe.trusted()"
