"""The journal's facts for a live inbox: answered by the journal index, and what changed since the last look.

Every row's verdict needs what the journal says about its bundle (when it arrived, how
often, over which transport, how it was accepted). The journal index (gage.home.cache.journalindex)
answers that per bundle, checked against the journal and caught up before each use, so
opening the interface never reads the whole journal (100,000 entries took about 0.8 s to
parse). What the index cannot say is what changed since the interface last looked: that
is what this reads. The journal is append-only (gage.home.journal.log): a new entry only ever adds
bytes after the last newline. So the first look only notes where the journal's last whole
line ends (reading backwards from the end, a block or so), and each later look reads only
what follows it. A journal that shrank, was replaced (another inode) or no longer has a
newline where the last look ended is started over, and then every verdict is computed
again (anything may read differently).

The offset is taken before the index is caught up, so every entry before it is in the
facts returned; an entry after it that the index already holds is named again on the next
look, which only checks that bundle once more. Display only: the bundle view, the gate,
`gage read` and `gage verdict` ask the index themselves.

`update` also says which bundles the new entries name (their verdict may have changed:
a resend over another route, an unattended accept) and whether any entry changes what
keys mean (a pairing, an unpairing, a key statement): then every verdict is recomputed.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from gage.home.journal.facts import JournalFacts
from gage.home.journal.lines import iter_lines, open_journal, parse_line, rfind_newline
from gage.home.layout import Home

# Entries after which no verdict can be trusted to be what it was: who is a contact, which key is retired.
KEY_EVENTS = frozenset({"paired", "unpaired", "key-retired", "key-countersigned", "key-statement-applied"})


@dataclass
class Update:
    facts: JournalFacts  # from the journal index, current as of this look (ask `prefetch` for many ids)
    touched: set[str] = field(default_factory=set)  # bundle ids named by entries read this time
    keys_changed: bool = False  # an entry read this time changes contacts or keys, or the journal started over
    full: bool = False  # a first look (or a start over): nothing was read, the index answers everything


class LiveFacts:
    def __init__(self) -> None:
        self._ino: tuple[int, int] | None = None  # None: no look yet
        self._offset = 0  # just after the last newline looked at
        self._lock = threading.Lock()
        self.read_bytes = 0  # journal bytes read by the last look (what the tests check)

    def update(self, home: Home) -> Update:
        """The facts as the journal is now (GageError if it cannot be read at all)."""
        with self._lock:
            fd = open_journal(home.journal.path)
            if fd is None:
                again = self._ino is not None
                self._ino, self._offset, self.read_bytes = None, 0, 0
                return Update(home.journal.index.facts(), keys_changed=again, full=True)
            try:
                st = os.fstat(fd)
                ino = (st.st_dev, st.st_ino)
                whole = self._ino is None or ino != self._ino or st.st_size < self._offset
                if not whole and self._offset > 0:
                    whole = os.pread(fd, 1, self._offset - 1) != b"\n"
                if whole:
                    again = self._ino is not None
                    self._ino, self._offset, self.read_bytes = ino, rfind_newline(fd, st.st_size) + 1, 0
                    return Update(home.journal.index.facts(), keys_changed=again, full=True)
                touched: set[str] = set()
                keys = False
                end = self._offset
                for start, line in iter_lines(fd, self._offset, st.st_size):  # a torn last line is left for the next look
                    end = start + len(line) + 1
                    e = parse_line(line)
                    if e is None:
                        continue
                    if isinstance(b := e.get("bundle"), str):
                        touched.add(b)
                    keys = keys or e.get("event") in KEY_EVENTS
                self.read_bytes = end - self._offset
                self._offset = end
            finally:
                os.close(fd)
            return Update(home.journal.index.facts(), touched, keys)
