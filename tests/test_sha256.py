"""gage.format.sha256 is SHA-256, whichever implementation answers (issue 28: start-up without OpenSSL)."""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys

import pytest

from gage.format import sha256


@pytest.mark.parametrize("size", [0, 1, 55, 56, 64, 1000, sha256.LARGE - 1, sha256.LARGE, sha256.LARGE + 1, 3 << 20])
def test_equal_to_hashlib_on_every_size_around_the_switch(size: int) -> None:
    data = os.urandom(size)
    assert sha256.hexdigest(data) == hashlib.sha256(data).hexdigest()


def test_the_fips_vectors() -> None:
    assert sha256.hexdigest(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256.hexdigest(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_small_inputs_load_no_openssl() -> None:
    probe = (
        "import sys; from gage.format import sha256; sha256.hexdigest(b'x' * 1000);"
        "print('_hashlib' in sys.modules, 'hashlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_python_without_its_own_sha256_uses_hashlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "_sha2", None)  # None in sys.modules: the import fails
    monkeypatch.setitem(sys.modules, "_sha256", None)
    try:
        fallback = importlib.reload(sha256)
        assert fallback._own is None
        assert fallback.hexdigest(b"abc") == hashlib.sha256(b"abc").hexdigest()
    finally:
        monkeypatch.undo()
        importlib.reload(sha256)
    assert sha256._own is not None
