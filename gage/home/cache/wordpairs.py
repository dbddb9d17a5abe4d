"""The derived word-pairs of keys this home has shown, on disk (cache/words.json).

Argon2id costs about 0.08 s a key, so listing contacts would pay it for every key every time.
The cache only saves time: gage.format.words derives, this remembers.
"""

from __future__ import annotations

import json
from pathlib import Path

from gage.format import strictjson
from gage.format.words import EVEN_INDEX, ODD_INDEX, PAIRS, VERSION, WordPairs, derive
from gage.home import homefile
from gage.home.cache import sealkey

TYPE_CHECKING = False  # importing typing costs start-up time (docs/architecture.md, "The start path")
if TYPE_CHECKING:
    from typing import Any

WORDS_LIMIT = 16 << 20  # cache/words.json: 8 words a key, for any number of contacts a person keeps


def _seal(secret: bytes, key: bytes, pairs: list[list[str]]) -> str:
    """An entry's seal: a keyed hash of the key and its words under the home's cache key
    (gage.home.cache.sealkey), so words changed in place, or planted by whoever cannot read that
    key (other list words, well formed), are derived again rather than shown."""
    return sealkey.seal_hex(secret, _text(key, pairs))


def _text(key: bytes, pairs: list[list[str]]) -> bytes:
    return key + json.dumps(pairs, separators=(",", ":")).encode("ascii")


class WordCache:
    """Derived words on disk, so listing contacts never pays Argon2id twice for a key.

    The cache only saves time: a damaged or edited entry is recomputed, never believed,
    because `words_for` re-derives when an entry does not decode to valid list words under
    its seal (under the home's cache key: an entry planted without it is derived again).
    Comparisons in the ceremony always use a fresh derivation.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # Opened beneath the folder above the cache folder (the home), so a link in place of
        # the cache folder is refused too.
        self._root, self._rel = path.parent.parent, f"{path.parent.name}/{path.name}"
        self._data: dict[str, Any] | None = None
        self._secret: bytes | None = None

    def _key(self) -> bytes:
        if self._secret is None:
            self._secret = sealkey.home_key(self._root)
        return self._secret

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            # A derived file, opened like a stranger's below the home's cache folder: a FIFO or
            # a link in its place is said once and ignored, never waited on.
            raw = homefile.read_derived(self._root, self._rel, WORDS_LIMIT)
            try:
                obj = json.loads(raw) if raw is not None else None
                data = obj.get(VERSION) if isinstance(obj, dict) else None
                # Anything but an object of entries is damage: start afresh rather than crash.
                self._data = data if isinstance(data, dict) else {}
            except (ValueError, RecursionError):  # RecursionError: a file nested thousands deep
                self._data = {}
        return self._data

    def words_for(self, key: bytes) -> WordPairs:
        data = self._load()
        entry = data.get(key.hex())
        pairs = entry.get("pairs") if isinstance(entry, dict) and entry.keys() == {"pairs", "seal"} else None
        if (
            isinstance(pairs, list)
            and len(pairs) == PAIRS
            and all(isinstance(p, list) and len(p) == 2 and p[0] in EVEN_INDEX and p[1] in ODD_INDEX for p in pairs)
            and sealkey.holds_hex(self._key(), entry["seal"], _text(key, pairs))  # type: ignore[index]
        ):
            return tuple((p[0], p[1]) for p in pairs)
        words = derive(key)
        pairs = [list(p) for p in words]
        data[key.hex()] = {"pairs": pairs, "seal": _seal(self._key(), key, pairs)}
        try:
            homefile.write_derived(self._root, self._rel, strictjson.dumps({VERSION: data}))
        except Exception:  # noqa: BLE001 - the cache is an optimisation; failing to write it is not an error
            pass
        return words
