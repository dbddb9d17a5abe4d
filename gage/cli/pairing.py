"""The word-pair ceremony at a terminal, as two people on a call really do it.

One misheard word used to end `gage pair`, and both people started over. Now a pair that
does not match is asked again (with the nearest list words for a word that is not on the
list, never the expected ones), and only a deliberate `give up` (or end of input) ends the
ceremony. `--mutual` interleaves both directions for two people pairing at once: each
screen shows its own pair i, then asks for theirs. Whatever the flow, the key is confirmed
only by `ceremony.confirm` over all eight words typed, derived afresh (spec/ceremony.md).
"""

from __future__ import annotations

import select
import sys
from collections.abc import Callable

from gage.cli.output import err, out, show
from gage.format.errors import Exit, RefusedError
from gage.format.keys import short_fingerprint
from gage.format.words import PAIRS, WordPairs, derive, hearing, pair_text
from gage.home.layout import Home
from gage.trust import ceremony

PROMPT = "   their 8 words: "
MUTUAL_METHOD = ceremony.MUTUAL_METHOD


class GaveUp(Exception):
    """The person ended the ceremony on purpose (`give up`, or end of input)."""


class TheyStopped(Exception):
    """The other side of an invite said, while this side typed, that its ceremony ended without a match."""


# `gage invite`/`join`: asked while this side waits for a line, it answers why the other side
# stopped (its `outcome` came), or None while it goes on.
Stopped = Callable[[], "str | None"]


def _ask(prompt: str, stopped: Stopped | None = None) -> str:
    if stopped is None:
        try:
            line = input(prompt)
        except EOFError:
            raise GaveUp("end of input") from None
    else:
        # A terminal gives a whole line at once; until one comes, the other side may say it stopped.
        sys.stdout.write(prompt)
        sys.stdout.flush()
        while not select.select([sys.stdin], [], [], 0.25)[0]:
            why = stopped()
            if why is not None:
                sys.stdout.write("\n")
                raise TheyStopped(why)
        line = sys.stdin.readline()
        if not line:
            raise GaveUp("end of input")
    if hearing.is_give_up(line):
        raise GaveUp("gave up")
    return line


def _explain(check: hearing.PairCheck) -> None:
    typed = " ".join(check.typed) or "(nothing)"
    err(f"   pair {check.index + 1}: {show(typed)!r}: {check.why}")
    for word, near in check.suggestions.items():
        if near:
            err(f"     {show(word)!r} is not on the list; did you mean {' or '.join(near)}? Ask them to spell it if unsure.")
        else:
            err(f"     {show(word)!r} is not on the list, nor close to a word on it.")


def _settle(expected: WordPairs, index: int, tried: set[int], stopped: Stopped | None = None) -> list[str]:
    """Pair `index`, asked until it matches exactly (`tried`: the pairs typed at least once)."""
    while True:
        again = index in tried
        prompt = f"   their pair {index + 1} again, as they read it (or `give up`): " if again else f"   their pair {index + 1}: "
        typed = hearing.words_of(_ask(prompt, stopped))
        tried.add(index)
        check = hearing.check_pair(expected, index, typed)
        if check.ok:
            return typed
        _explain(check)


def _not_confirmed(got: list[list[str] | None], tried: set[int], why: str) -> int:
    err(f"gage: NOT confirmed: {why}. Nothing was confirmed; this may not be their key.")
    for i in range(PAIRS):
        if got[i] is None:
            err(f"  pair {i + 1} did not match" if i in tried else f"  pair {i + 1} was not heard")
    return int(Exit.REFUSED)


def one_way(home: Home, name: str, key: bytes) -> int:
    """Read my words to them (shown by the caller), then take theirs: a line of eight, or pair by pair.

    Every pair of the first line is checked; those that do not match are explained, then
    asked again one by one."""
    expected = derive(key)
    got: list[list[str] | None] = [None] * PAIRS
    tried: set[int] = set()
    try:
        words = hearing.words_of(_ask(PROMPT))
        if len(words) not in (2, 2 * PAIRS):
            err(f"   expected 8 words (4 pairs), or one pair; got {len(words)}. Each pair that does not match is asked again.")
        for i, typed in enumerate(hearing.split_line(words)):
            if typed is None:
                continue
            tried.add(i)
            check = hearing.check_pair(expected, i, typed)
            if check.ok:
                got[i] = typed
            else:
                _explain(check)
        for i in range(PAIRS):
            if got[i] is None:
                got[i] = _settle(expected, i, tried)
    except GaveUp as why:
        return _not_confirmed(got, tried, str(why))
    return _finish(home, name, key, got, ceremony.METHOD)


# `gage invite`/`join`: told how this side's pairs ended (all matched, or why not), it answers
# None when the other side matched too, else why this side must not confirm.
Agree = Callable[[bool, str], "str | None"]


def _closing(home: Home, key: bytes, stopped: Stopped | None) -> None:
    """The closing pair, read to each other and typed before anything is confirmed (an invite's flow)."""
    c1, c2 = hearing.closing_pair(home.identity.key, key)
    out("")
    out(f" Last, read each other the closing pair:  {pair_text(c1, c2)}")
    out("   It is the same on both screens only if each of you holds the other's key.")
    again = False
    while True:
        prompt = "   their closing pair again, as they read it (or `give up`): " if again else "   their closing pair: "
        check = hearing.check_pair(((c1, c2),), 0, hearing.words_of(_ask(prompt, stopped)))
        if check.ok:
            return
        again = True
        err(f"   closing pair: {show(' '.join(check.typed) or '(nothing)')!r}: {check.why}")


def mutual(home: Home, name: str, key: bytes, mine: WordPairs, *, agree: Agree | None = None, stopped: Stopped | None = None) -> int:
    """Both directions in one flow: for each pair, read mine, then type theirs.

    With `agree` (an invite), the closing pair is read and typed before anything is confirmed, and
    nothing is confirmed unless the other side's ceremony matched too; `stopped` tells, while a line
    is awaited, that the other side ended theirs."""
    expected = derive(key)
    got: list[list[str] | None] = [None] * PAIRS
    tried: set[int] = set()
    try:
        for i, (a, b) in enumerate(mine):
            out(f" {i + 1}. Read YOUR pair {i + 1}:  {pair_text(a, b)}")
            got[i] = _settle(expected, i, tried, stopped)
        if agree is not None:
            _closing(home, key, stopped)
    except GaveUp as why:
        if agree is not None:
            agree(False, str(why))
        return _not_confirmed(got, tried, str(why))
    except TheyStopped as why:
        return _not_confirmed(got, tried, f"the other side stopped ({why})")
    if agree is not None:
        out("   Your side matched. Waiting for theirs (nothing is confirmed until both sides match)...")
        held = agree(True, "")
        if held is not None:
            err(f"gage: NOT confirmed: {show(held)}. Nothing was confirmed on this side either.")
            return int(Exit.REFUSED)
        return _finish(home, name, key, got, MUTUAL_METHOD)
    code = _finish(home, name, key, got, MUTUAL_METHOD)
    if code == 0:
        c1, c2 = hearing.closing_pair(home.identity.key, key)
        out("")
        out(f"Last, read each other the closing pair: {pair_text(c1, c2)}")
        out("It is the same on both screens only if each of you now holds the other's key. If theirs differs, or they")
        out(f"did not finish, their side is not confirmed: run it again together (and `gage contacts remove {show(name)}` here).")
    return code


def _finish(home: Home, name: str, key: bytes, got: list[list[str] | None], method: str) -> int:
    heard = " ".join(w for pair in got for w in (pair or []))
    try:
        outcome = ceremony.confirm(home, name, key, heard, method=method)
    except RefusedError as exc:
        err(f"gage: refused: {show(str(exc))}")
        return int(Exit.REFUSED)
    if not outcome.confirmed:  # cannot happen after four exact pairs; the compare is confirm's
        return _not_confirmed([None] * PAIRS, set(range(PAIRS)), outcome.message)
    out(f"Confirmed. {show(name)} is now a contact ({short_fingerprint(key)}).")
    return 0
