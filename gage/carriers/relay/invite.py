"""`gage invite` / `gage join`: two homes swap their claims through the relay under a one-time code.

The code's words are the password of SPAKE2 (the PAKE magic-wormhole uses): both sides get
one shared key only if they typed the same code, and everything after the first message is
sealed with it (NaCl secretbox, a key per direction, each drawn from the shared key by HKDF as
magic-wormhole draws its own). So the relay and anyone watching it learn neither who pairs nor
their keys; a wrong code is found before any word is read (the inviter cannot open the joiner's
claims, and says so); and a relay that does not know the code cannot swap a claim without the
box failing. A code takes a few wrong tries at most (spec/relay.md section 10), and what is not
a well-formed join takes none.

What comes through is still only a claim. Whoever learned the code in time (the relay
included) can run the PAKE with each side and hand each their own key: the word-pair
ceremony that follows, and only it, confirms a key, and that is what catches them. The
route each side claims (its mailbox and relay) is signed by its key over this exchange's two
SPAKE2 messages, so someone in the middle cannot pass both real keys through and swap only the
relay: each side's exchange with them has messages of its own. The ceremony's outcome travels
here too, so that neither side confirms unless both matched.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import nats.errors
from nats.aio.client import Client
from spake2 import SPAKE2_A, SPAKE2_B

from gage.carriers.relay import mailbox, rendezvous
from gage.carriers.relay.errors import RelayError
from gage.carriers.relay.inviteclaims import ROUTE_CONTEXT as ROUTE_CONTEXT
from gage.carriers.relay.inviteclaims import Claims as Claims
from gage.carriers.relay.inviteclaims import Session as Session
from gage.carriers.relay.inviteclaims import box_key as box_key
from gage.carriers.relay.inviteclaims import parse_claims as parse_claims
from gage.carriers.relay.inviteclaims import route_bytes as route_bytes
from gage.carriers.relay.inviteclaims import session_id as session_id
from gage.carriers.relay.rendezvous import Code, Said
from gage.format.errors import MalformedError, RefusedError

VERSION = rendezvous.VERSION
ID_A, ID_B = b"gage/invite/v1/inviter", b"gage/invite/v1/joiner"
ANSWER_WAIT = 30.0  # a joiner waits this long for the inviter's answer
OUTCOME_WAIT = 1800.0  # and each side this long for the other's ceremony to end
LOOKUP_WAIT = 10.0  # reading a subject through (at most rendezvous.PER_SUBJECT messages)
MAX_TRIES = 3  # wrong codes an invite takes before it closes: a guesser's odds are 3 in 65,536
# Why a `refused` was sent: the box did not open, or it opened and what was in it was refused.
WRONG_CODE, CLAIMS_REFUSED = "wrong code", "claims refused"
T = TypeVar("T")


class InviteRefused(RefusedError):
    """The code was used, expired, wrong, or never made: nothing was swapped (exit 9)."""


class Withdrawn(RefusedError):
    """This side stopped waiting (the interface's Esc, as Ctrl-C on the command line): nothing was swapped."""


def _msg(kind: str, **fields: Any) -> dict[str, Any]:
    return {"gage-invite": VERSION, "kind": kind, **fields}


def _is(s: Said, *kinds: str) -> bool:
    return s.kind() in kinds


def _live(offer: Said | None, later: list[str]) -> bool:
    """An offer within its `ttl` (the relay's time of it) that nothing closed since."""
    if offer is None or any(k in ("answer", "closed") for k in later):
        return False
    ttl = offer.body.get("ttl")
    return type(ttl) is int and offer.time + ttl > time.time()


def _pake_message(s: Said) -> bytes | None:
    """A SPAKE2 message as hex, 33 bytes (the side's byte and a group element), else None."""
    text = s.body.get("pake")
    if not isinstance(text, str) or len(text) != 66:
        return None
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None


async def _on_relay(url: str, creds: str | None, step: Callable[[Client], Awaitable[T]]) -> T:
    """One step on one connection; the relay failing under it is a RelayError naming the step."""
    try:
        async with mailbox.connected(url, creds) as nc:
            await rendezvous.ensure_stream(nc)
            return await step(nc)
    except (TimeoutError, nats.errors.Error, OSError) as exc:
        raise RelayError(f"lost the relay at {url} during the invite ({exc or type(exc).__name__}): nothing was confirmed") from None
    except RelayError as exc:
        if "nothing was confirmed" in exc.message:
            raise
        raise RelayError(f"{exc.message}; the invite stopped and nothing was confirmed") from None


class _Side:
    def __init__(self, url: str, creds: str | None, code: Code, role: str) -> None:
        self.url, self.creds, self.code, self.role = url, creds, code, role
        self.session: Session | None = None
        self.mine = code.subject(role)
        self.theirs = code.subject("j" if role == "i" else "i")
        self.seen = 0  # their messages up to this sequence are read

    def _run(self, step: Callable[[Client], Awaitable[T]]) -> T:
        result: T = mailbox.run(_on_relay(self.url, self.creds, step))
        return result

    def _their_outcome(self, s: Said) -> dict[str, Any] | None:
        """Their `outcome`, if `s` is one that opens with the shared key (anyone may publish here)."""
        if self.session is None or not _is(s, "outcome"):
            return None
        try:
            o = self.session.open(s.body.get("box"))
        except MalformedError:
            return None
        if isinstance(o, dict) and o.get("kind") == "outcome" and isinstance(o.get("matched"), bool):
            return o
        return None

    def stopped(self) -> str | None:
        """Whether the other side has said it stopped (`outcome`, not matched): why, or None. One look."""
        heard: list[dict[str, Any]] = []

        async def step(nc: Client) -> str | None:
            until = asyncio.get_running_loop().time() + LOOKUP_WAIT
            async for s in rendezvous.messages(nc, self.theirs, self.seen, until=until):
                o = self._their_outcome(s)
                if o is not None:
                    heard.append(o)
                    break
            if heard and not heard[0]["matched"]:
                said = heard[0].get("why")
                return said if isinstance(said, str) and said else "they gave up"
            return None

        return self._run(step)

    def outcome(self, matched: bool, why: str = "", cancelled: Callable[[], bool] | None = None) -> str | None:
        """Say how our ceremony ended; if it matched, wait for theirs. None: both matched; else why not.

        `cancelled` (asked between polls) ends the wait: this side then confirms nothing."""
        assert self.session is not None
        session = self.session
        body = _msg("outcome", box=session.seal({"kind": "outcome", "matched": matched, "why": why[:200]}))

        async def step(nc: Client) -> str | None:
            await rendezvous.say(nc, self.mine, body)
            if not matched:
                return why
            heard: list[dict[str, Any]] = []

            def theirs(s: Said) -> bool:
                o = self._their_outcome(s)
                if o is not None:
                    heard.append(o)
                return o is not None

            until = asyncio.get_running_loop().time() + OUTCOME_WAIT
            try:
                await rendezvous.wait_for(nc, self.theirs, self.seen, theirs, until=until, what="their outcome", cancelled=cancelled)
            except rendezvous.Cancelled:
                return "this side left before the other side finished"
            except rendezvous.Waited:
                return "the other side did not finish its ceremony in time"
            o = heard[0]
            if o["matched"]:
                return None
            said = o.get("why") if isinstance(o.get("why"), str) else ""
            return f"the other side did not confirm ({said or 'gave up'})"

        return self._run(step)


class Inviter(_Side):
    """`gage invite`: make the offer, take the first join that opens, answer it."""

    def __init__(self, url: str, creds: str | None, code: Code | None, expires: float) -> None:
        self.chosen = code is not None
        super().__init__(url, creds, code or rendezvous.new_code(), "i")
        self.expires = expires
        self.offer_seq = 0
        self.deadline = 0.0
        self._start()

    def _start(self) -> None:
        """SPAKE2 as A with the code's text as its password; kept so that each try finishes afresh."""
        pake = SPAKE2_A(self.code.text.encode(), idA=ID_A, idB=ID_B)
        self.msg_a = pake.start()
        self._pake = pake.serialize()

    def open(self) -> Code:
        """Publish the offer under a number nobody's live offer holds; the code to read to them."""

        async def step(nc: Client) -> Code:
            for tries in range(40):
                until = asyncio.get_running_loop().time() + LOOKUP_WAIT
                offer, later = await rendezvous.newest(nc, self.code.subject("i"), ("offer",), until=until)
                if not _live(offer, later):
                    self.mine, self.theirs = self.code.subject("i"), self.code.subject("j")
                    self._start()
                    offer_body = _msg("offer", pake=self.msg_a.hex(), ttl=int(self.expires))
                    try:
                        self.offer_seq = await rendezvous.say(nc, self.mine, offer_body)
                        break
                    except rendezvous.Full:
                        if self.chosen:
                            raise InviteRefused(f"the code number {self.code.nameplate} is full on this relay (used often, or flooded): choose another") from None
                elif self.chosen:
                    raise InviteRefused(f"the code number {self.code.nameplate} is in use by another invite on this relay: choose another")
                # Short numbers first; a busy relay gets longer ones.
                self.code = rendezvous.new_code(secrets.randbelow(99 if tries < 10 else rendezvous.MAX_NAMEPLATE) + 1)
            else:
                raise RelayError("no free invite number on this relay: try again in a minute")
            self.seen = self.offer_seq
            self.deadline = time.time() + self.expires
            return self.code

        return self._run(step)

    def withdraw(self, why: str = "withdrawn") -> None:
        """Close the code (Ctrl-C, or given up before anyone joined), so a join is told at once."""
        self._run(lambda nc: rendezvous.say(nc, self.mine, _msg("closed", why=why)))

    def wait_join(self, mine: Claims, wrong_code: Callable[[int], None] | None = None, cancelled: Callable[[], bool] | None = None) -> Claims:
        """The first join after the offer that opens with the code's key; a wrong code costs one of MAX_TRIES.

        What is not a well-formed join (not gage's, no SPAKE2 message that finishes) costs nothing: a
        stranger without the words cannot spend the code by writing junk. `cancelled` (asked between
        polls) withdraws the code, so a join is told at once, as `withdraw` after Ctrl-C does."""

        async def step(nc: Client) -> Claims:
            wrong = 0
            until = asyncio.get_running_loop().time() + max(0.0, self.deadline - time.time())
            while True:
                try:
                    join = await rendezvous.wait_for(nc, self.theirs, self.seen, lambda s: _is(s, "join"), until=until, what="a join",
                                                     cancelled=cancelled)
                except rendezvous.Cancelled:
                    await rendezvous.say(nc, self.mine, _msg("closed", why="withdrawn"))
                    raise Withdrawn("the code is withdrawn; nothing was swapped") from None
                except rendezvous.Waited:
                    await rendezvous.say(nc, self.mine, _msg("closed", why="expired"))
                    tried = f" ({wrong} wrong code{'s' if wrong != 1 else ''} tried)" if wrong else ""
                    raise InviteRefused(f"the code expired before anyone joined{tried}: nothing was swapped (run `gage invite` again)") from None
                self.seen = join.seq
                msg_b = _pake_message(join)
                if msg_b is None:
                    continue
                try:
                    shared = SPAKE2_A.from_serialized(self._pake).finish(msg_b)
                except Exception:  # spake2 raises several kinds for a message that is no group element  # noqa: BLE001
                    continue
                session = Session(shared, "i", session_id(self.msg_a, msg_b))
                try:
                    body = session.open(join.body.get("box"))
                except MalformedError:
                    wrong += 1
                    await rendezvous.say(nc, self.mine, _msg("refused", to=join.seq, why=WRONG_CODE))
                    if wrong < MAX_TRIES:
                        if wrong_code is not None:
                            wrong_code(wrong)
                        continue
                    await rendezvous.say(nc, self.mine, _msg("closed", why="too many wrong codes"))
                    raise InviteRefused(
                        f"{MAX_TRIES} joins came with a wrong code: the code is closed and nothing was swapped; "
                        "if it was them, check the code together and run `gage invite` again"
                    ) from None
                try:
                    theirs = parse_claims(body, session.id)
                except MalformedError as exc:
                    await rendezvous.say(nc, self.mine, _msg("refused", to=join.seq, why=CLAIMS_REFUSED))
                    raise InviteRefused(
                        f"someone joined with the right code but claims refused ({exc}): the code is spent and nothing was swapped"
                    ) from None
                self.session = session
                await rendezvous.say(nc, self.mine, _msg("answer", to=join.seq, box=session.seal(mine.to_json(session.id))))
                return theirs

        return self._run(step)


class Joiner(_Side):
    """`gage join CODE`: find the offer, send our claims sealed, read theirs."""

    def __init__(self, url: str, creds: str | None, code: Code) -> None:
        super().__init__(url, creds, code, "j")

    def meet(self, mine: Claims, cancelled: Callable[[], bool] | None = None) -> Claims:
        """Join with our claims; theirs once the inviter answers. `cancelled` (asked while the answer is
        awaited) stops it: the inviter then hears this side's outcome, not matched."""

        async def step(nc: Client) -> Claims:
            until = asyncio.get_running_loop().time() + LOOKUP_WAIT
            offer, later = await rendezvous.newest(nc, self.theirs, ("offer",), until=until)
            if offer is None:
                raise InviteRefused("no invite with this code on this relay (it expired, or was never made: check the number and the relay)")
            if "closed" in later or "answer" in later:
                why = "it was already used (a code is good once)" if "closed" not in later else "it was closed (expired, withdrawn, or too many wrong codes)"
                raise InviteRefused(f"this code is refused: {why}. Ask them for a new one (`gage invite`); nothing was swapped")
            if not _live(offer, later):
                raise InviteRefused("this code has expired: ask them for a new one (`gage invite`); nothing was swapped")
            msg_a = _pake_message(offer)
            pake = SPAKE2_B(self.code.text.encode(), idA=ID_A, idB=ID_B)
            msg_b = pake.start()
            try:
                if msg_a is None:
                    raise ValueError
                shared = pake.finish(msg_a)
            except Exception:  # spake2 raises several kinds for a message that is no group element  # noqa: BLE001
                raise InviteRefused("the invite under this code is not one gage made: nothing was swapped") from None
            self.session = session = Session(shared, "j", session_id(msg_a, msg_b))
            box = session.seal(mine.to_json(session.id))
            try:
                join_seq = await rendezvous.say(nc, self.mine, _msg("join", pake=msg_b.hex(), box=box))
            except rendezvous.Full:
                raise InviteRefused("this code's number is full on the relay (someone filled it): ask them for a new code; nothing was swapped") from None
            self.seen = offer.seq

            def answer(s: Said) -> bool:
                if _is(s, "answer") and s.body.get("to") != join_seq:
                    raise InviteRefused("this code was used by someone else just before you (a code is good once): "
                                        "nothing was swapped. Tell them, and ask for a new one")
                if _is(s, "closed"):
                    raise InviteRefused(f"the inviter closed this code ({s.body.get('why') if isinstance(s.body.get('why'), str) else 'closed'}): "
                                        "nothing was swapped. Ask them for a new one")
                if _is(s, "answer"):
                    try:  # ours only if it opens: anyone may publish an `answer` to our join
                        session.open(s.body.get("box"))
                    except MalformedError:
                        return False
                    return True
                return _is(s, "refused") and s.body.get("to") == join_seq

            until = asyncio.get_running_loop().time() + ANSWER_WAIT
            try:
                got = await rendezvous.wait_for(nc, self.theirs, offer.seq, answer, until=until, what="the answer", cancelled=cancelled)
            except rendezvous.Cancelled:
                body = _msg("outcome", box=session.seal({"kind": "outcome", "matched": False, "why": "left before the answer"}))
                await rendezvous.say(nc, self.mine, body)
                raise Withdrawn("the join was left before the inviter answered; nothing was swapped") from None
            except rendezvous.Waited:
                raise RelayError("the inviter did not answer (is their `gage invite` still running?): nothing was confirmed") from None
            self.seen = got.seq
            if _is(got, "refused"):
                if got.body.get("why") == CLAIMS_REFUSED:
                    raise InviteRefused("the inviter's side refused what we sent (the code was right, our claims were not taken): "
                                        "nothing was swapped")
                raise InviteRefused("the code did not match: the inviter's side could not open what we sent (a wrong code). "
                                    "Check the code together and run `gage join` again (an invite takes a few tries); nothing was swapped")
            try:
                return parse_claims(self.session.open(got.body.get("box")), self.session.id)
            except MalformedError as exc:
                raise InviteRefused(f"the answer under this code is not the inviter's ({exc}): nothing was confirmed") from None

        return self._run(step)
