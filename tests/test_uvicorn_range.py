"""uvicorn is held to the versions whose H11Protocol gage.carriers.a2a.connections subclasses
(pyproject.toml says which and why); CI's pinned version is inside that range, and the
internals the subclass relies on are there in the version installed."""

from __future__ import annotations

import inspect
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def _range() -> Requirement:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return next(r for r in map(Requirement, extras["a2a"]) if r.name == "uvicorn")


def test_the_range_has_an_upper_bound_and_holds_cis_pin_and_what_is_installed() -> None:
    spec = _range().specifier
    assert any(s.operator == "<" for s in spec), str(spec)
    pinned = next(line.split("==")[1] for line in (ROOT / "constraints.txt").read_text().splitlines() if line.startswith("uvicorn=="))
    assert spec.contains(pinned), (str(spec), pinned)
    pytest.importorskip("uvicorn")
    installed = metadata.version("uvicorn")
    assert spec.contains(installed), (str(spec), installed)


def test_the_internals_the_guard_subclasses_are_there() -> None:
    h11_impl = pytest.importorskip("uvicorn.protocols.http.h11_impl")
    proto = h11_impl.H11Protocol
    for method in ("connection_made", "connection_lost", "on_response_complete"):
        assert callable(getattr(proto, method, None)), method
    init = inspect.getsource(proto.__init__)
    for attribute in ("self.conn = ", "self.server_state = ", "self.connections = server_state.connections", "self.cycle"):
        assert attribute in init, attribute
    assert "self.response_complete = False" in inspect.getsource(h11_impl.RequestResponseCycle.__init__)
