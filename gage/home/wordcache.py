"""The derived word-pairs of keys this home has shown, on disk (cache/words.json).

Argon2id costs about 0.08 s a key, so listing contacts would pay it for every key every time.
The cache only saves time: gage.format.words derives, this remembers.
"""

from __future__ import annotations

import json
from pathlib import Path

from gage.bundle import atomic
from gage.format import strictjson
from gage.format.words import EVEN_INDEX, ODD_INDEX, PAIRS, VERSION, WordPairs, derive


class WordCache:
    """Derived words on disk, so listing contacts never pays Argon2id twice for a key.

    The cache only saves time: a damaged or edited entry is recomputed, never believed,
    because `words_for` re-derives when an entry does not decode to valid list words.
    Comparisons in the ceremony always use a fresh derivation.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: dict[str, list[list[str]]] | None = None

    def _load(self) -> dict[str, list[list[str]]]:
        if self._data is None:
            try:
                obj = json.loads(self.path.read_bytes())
                data = obj.get(VERSION) if isinstance(obj, dict) else None
                # Anything but an object of entries is damage: start afresh rather than crash.
                self._data = data if isinstance(data, dict) else {}
            except (OSError, ValueError, RecursionError):  # RecursionError: a file nested thousands deep
                self._data = {}
        return self._data

    def words_for(self, key: bytes) -> WordPairs:
        data = self._load()
        entry = data.get(key.hex())
        if (
            isinstance(entry, list)
            and len(entry) == PAIRS
            and all(isinstance(p, list) and len(p) == 2 and p[0] in EVEN_INDEX and p[1] in ODD_INDEX for p in entry)
        ):
            return tuple((p[0], p[1]) for p in entry)
        words = derive(key)
        data[key.hex()] = [list(p) for p in words]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(self.path, strictjson.dumps({VERSION: data}), 0o600)
        except Exception:  # noqa: BLE001 - the cache is an optimisation; failing to write it is not an error
            pass
        return words
