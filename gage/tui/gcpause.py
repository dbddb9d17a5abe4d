"""Full collections held off while the inbox fills (speed a person feels).

Filling 10,000 rows grows the heap by about two million objects (rows, cells, the table's
own), and Python's collector walks the whole heap each time the long-lived objects have
grown by a quarter: 27 pauses of 0.05 to 0.9 s, 5 s in all, during one first fill at 10,000
pending (bench/bench_tui.py, each collection timed through gc.callbacks). So while a fill
runs, each batch the inbox applies ends with a young collection and `gc.freeze()` (a list
splice): everything alive moves to the collector's permanent generation, and a full
collection walks only what came since. When no fill is running any more, `gc.unfreeze()`
gives it all back, so a cycle left meanwhile is found at the next full collection as it
would have been: nothing stays frozen between fills (a test holds the count at zero).
Measured on the same bench: 4 full collections and 1.7 s instead of 27 and 5.2 s; the first
fill 11.5 to 10.4 s, a restart's 4.3 to 3.2 s.
"""

from __future__ import annotations

import gc


def hold() -> None:
    """After a batch is applied while a fill runs: what is alive now is not walked again."""
    gc.collect(1)
    gc.freeze()


def release() -> None:
    """No fill running: everything frozen goes back to the collector."""
    gc.unfreeze()
