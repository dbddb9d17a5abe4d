"""gage.format.sha256 is SHA-256 (FIPS 180-4), as hashlib gives it, on every size."""

from __future__ import annotations

import hashlib
import os

import pytest

from gage.format import sha256


@pytest.mark.parametrize("size", [0, 1, 55, 56, 64, 1000, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 3 << 20])
def test_equal_to_hashlib_on_every_size(size: int) -> None:
    data = os.urandom(size)
    assert sha256.hexdigest(data) == hashlib.sha256(data).hexdigest()


def test_the_fips_vectors() -> None:
    assert sha256.hexdigest(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256.hexdigest(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
