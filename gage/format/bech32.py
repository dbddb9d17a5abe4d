"""bech32 (BIP 173), as age writes its keys: `age1...` recipients and `AGE-SECRET-KEY-1...` identities.

Format code with nothing of gage in it (gage.home.sealing reads and writes the relay's sealing
keys with it), apart so that module stays about what a sealing key means.
"""

from __future__ import annotations

_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


def _polymod(values: list[int]) -> int:
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= _GEN[i] if (top >> i) & 1 else 0
    return chk


def _hrp_expand(hrp: str) -> list[int]:
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def _convert(data: bytes | list[int], frombits: int, tobits: int, pad: bool) -> list[int] | None:
    acc = bits = 0
    out: list[int] = []
    maxv = (1 << tobits) - 1
    for value in data:
        acc = (acc << frombits) | value
        bits += frombits
        while bits >= tobits:
            bits -= tobits
            out.append((acc >> bits) & maxv)
    if pad:
        if bits:
            out.append((acc << (tobits - bits)) & maxv)
    elif bits >= frombits or ((acc << (tobits - bits)) & maxv):
        return None
    return out


def bech32_encode(hrp: str, data: bytes) -> str:
    five = _convert(data, 8, 5, True)
    assert five is not None
    check = _polymod(_hrp_expand(hrp) + five + [0] * 6) ^ 1
    five += [(check >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_CHARSET[d] for d in five)


def bech32_decode(text: str, hrp: str) -> bytes | None:
    """The bytes of a bech32 string with this human-readable part, or None. One case only."""
    if text.lower() != text and text.upper() != text:
        return None
    low = text.lower()
    sep = low.rfind("1")
    if sep < 1 or low[:sep] != hrp or len(low) - sep < 7:
        return None
    try:
        data = [_CHARSET.index(c) for c in low[sep + 1 :]]
    except ValueError:
        return None
    if _polymod(_hrp_expand(hrp) + data) != 1:
        return None
    raw = _convert(data[:-6], 5, 8, False)
    return bytes(raw) if raw is not None else None
