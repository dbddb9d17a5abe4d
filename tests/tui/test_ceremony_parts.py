"""The ceremony's helpers: completion from the right word list, and the per-pair marks."""

from __future__ import annotations

from tuikit import TestApp, World, identity, name_them, typed_keys

from gage.format.words.wordlist import EVEN, ODD
from gage.tui.ceremony import CeremonyScreen, PairWordSuggester, pair_marks

EXPECTED = (("aardvark", "adroitness"), ("absurd", "adviser"), ("accrue", "aftermath"), ("acme", "aggregate"))


async def test_completion_uses_the_list_for_each_position() -> None:
    s = PairWordSuggester()
    assert await s.get_suggestion("aardv") == "aardvark"
    # Second word: odd list only ("adroitness"), never an even-list word.
    assert await s.get_suggestion("aardvark adr") == "aardvark adroitness"
    assert await s.get_suggestion("aardvark, adr") == "aardvark, adroitness"
    assert await s.get_suggestion("aardvark ") is None  # nothing typed yet for the next word
    assert await s.get_suggestion("zzz") is None
    eight = " ".join(w for pair in EXPECTED for w in pair)
    assert await s.get_suggestion(eight + " a") is None  # no ninth word
    assert EVEN[0] == "aardvark" and ODD[0] == "adroitness"


def test_pair_marks_follow_what_is_typed() -> None:
    assert pair_marks(EXPECTED, "") == ["open"] * 4
    assert pair_marks(EXPECTED, "aardvark adroit") == ["open"] * 4  # still typing the second word
    assert pair_marks(EXPECTED, "aardvark adroitness") == ["match", "open", "open", "open"]
    assert pair_marks(EXPECTED, "aardvark adviser ") == ["mismatch", "open", "open", "open"]
    typed = "aardvark adroitness absurd adviser accrue aggregate acme aftermath"
    assert pair_marks(EXPECTED, typed + " ") == ["match", "match", "mismatch", "mismatch"]
    # The last word counts once it is a whole word of its list (nothing follows the eighth word);
    # before that it may still be being typed, and its pair stays open.
    assert pair_marks(EXPECTED, typed.upper().replace(" ", "-")) == ["match", "match", "mismatch", "mismatch"]
    assert pair_marks(EXPECTED, typed[: -len("math")]) == ["match", "match", "mismatch", "open"]


async def test_right_arrow_takes_the_completion(world: World) -> None:
    bob = identity("bob", 7)
    app = TestApp(world.home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.start_ceremony(bob.key, "bob", "test")
        await pilot.pause()
        await name_them(pilot, "bob")
        assert isinstance(app.screen, CeremonyScreen)
        await pilot.press(*typed_keys("aardv"))
        await pilot.pause()
        await pilot.press("right")
        assert app.screen.query_one("#heard").value == "aardvark"
        await pilot.press(*typed_keys(" adr"))
        await pilot.pause()
        await pilot.press("right")
        assert app.screen.query_one("#heard").value == "aardvark adroitness"
