"""`gage invite` / `gage join`: two homes swap their claims through the relay under a one-time code.

The code's words are the password of SPAKE2 (the PAKE magic-wormhole uses): both sides get
one shared key only if they typed the same code, and everything after the first message is
sealed with it (NaCl secretbox, a key per direction). So the relay and anyone watching it
learn neither who pairs nor their keys; a wrong code is found before any word is read (the
inviter cannot open the joiner's claims, and says so); and a relay that does not know the
code cannot swap a claim without the box failing. One join is taken per code, right or
wrong, so a guesser has one try at 1 in 65,536 (spec/relay.md section 10).

What comes through is still only a claim. Whoever learned the code in time (the relay
included) can run the PAKE with each side and hand each their own key: the word-pair
ceremony that follows, and only it, confirms a key, and that is what catches them. The
ceremony's outcome travels here too, so that neither side confirms unless both matched.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import nacl.exceptions
import nacl.secret
import nats.errors
from nats.aio.client import Client
from spake2 import SPAKE2_A, SPAKE2_B, SPAKEError

from gage.carriers.relay import mailbox, rendezvous
from gage.carriers.relay.errors import RelayError
from gage.carriers.relay.rendezvous import Code, Said
from gage.format import strictjson
from gage.format.errors import MalformedError, RefusedError
from gage.format.keyfile import KeyFile
from gage.home import sealing, whereabouts

VERSION = 1
ID_A, ID_B = b"gage/invite/v1/inviter", b"gage/invite/v1/joiner"
ANSWER_WAIT = 30.0  # a joiner waits this long for the inviter's answer
OUTCOME_WAIT = 1800.0  # and each side this long for the other's ceremony to end
T = TypeVar("T")


class InviteRefused(RefusedError):
    """The code was used, expired, wrong, or never made: nothing was swapped (exit 9)."""


@dataclass(frozen=True)
class Claims:
    """What one home says about itself: its key file (with the sealing binding), mailbox and relay. Claims only."""

    keyfile: KeyFile
    mailbox: str
    relay: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": "claims", "keyfile": self.keyfile.to_bytes().decode("utf-8"), "mailbox": self.mailbox, "relay": self.relay}

    def where(self, source: str) -> whereabouts.Where:
        assert self.keyfile.sealing is not None
        return whereabouts.from_binding(sealing.parse_carried(self.keyfile.sealing), relay=self.relay, source=source)


def parse_claims(body: Any) -> Claims:
    """Their claims, refused unless the sealing binding is by their key and the mailbox is its own."""
    if not isinstance(body, dict) or body.get("kind") != "claims" or set(body) != {"kind", "keyfile", "mailbox", "relay"}:
        raise MalformedError("the other side's claims are not in gage's form")
    kf_text, mb, relay = body["keyfile"], body["mailbox"], body["relay"]
    if not all(isinstance(v, str) for v in (kf_text, mb, relay)):
        raise MalformedError("the other side's claims are not in gage's form")
    kf = KeyFile.parse(kf_text.encode("utf-8"))
    if kf.sealing is None:
        raise MalformedError("the other side's key file carries no sealing binding (no mailbox)")
    binding = sealing.parse_carried(kf.sealing)
    if binding.signing_key != kf.key or not binding.verifies():
        raise MalformedError("the other side's sealing binding is not signed by their key")
    if mb != sealing.mailbox_address(binding.sealing_key):
        raise MalformedError("the other side's mailbox is not the one their sealing key derives")
    if not relay or len(relay) > whereabouts.MAX_TEXT or any(ord(c) < 32 for c in relay):
        raise MalformedError("the other side's relay is not one line of text")
    return Claims(kf, mb, relay)


class Session:
    """The shared key, once the PAKE finished: a box each way."""

    def __init__(self, key: bytes, mine: str) -> None:
        def sub(side: str) -> nacl.secret.SecretBox:
            return nacl.secret.SecretBox(hashlib.sha256(b"gage/invite/v1\x00" + side.encode() + b"\x00" + key).digest())

        self._mine, self._theirs = sub(mine), sub("j" if mine == "i" else "i")

    def seal(self, body: dict[str, Any]) -> str:
        return bytes(self._mine.encrypt(strictjson.dumps(body))).hex()

    def open(self, box: object) -> Any:
        """Their sealed JSON; MalformedError if it does not open with the shared key."""
        try:
            if not isinstance(box, str):
                raise ValueError
            return strictjson.loads(self._theirs.decrypt(bytes.fromhex(box)), limit=rendezvous.MAX_MESSAGE, what="invite box")
        except (ValueError, nacl.exceptions.CryptoError):
            raise MalformedError("it does not open with the key the code gives") from None


def _msg(kind: str, **fields: Any) -> dict[str, Any]:
    return {"gage-invite": VERSION, "kind": kind, **fields}


def _is(s: Said, *kinds: str) -> bool:
    return s.body.get("gage-invite") == VERSION and s.body.get("kind") in kinds


def _live_offer(s: Said | None) -> bool:
    if s is None or not _is(s, "offer"):
        return False
    ttl = s.body.get("ttl")
    return isinstance(ttl, int) and s.time + ttl > time.time()


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

    def outcome(self, matched: bool, why: str = "") -> str | None:
        """Say how our ceremony ended; if it matched, wait for theirs. None: both matched; else why not."""
        assert self.session is not None
        session = self.session
        body = _msg("outcome", box=session.seal({"kind": "outcome", "matched": matched, "why": why[:200]}))

        async def step(nc: Client) -> str | None:
            await rendezvous.say(nc, self.mine, body)
            if not matched:
                return why
            heard: list[Any] = []

            def theirs(s: Said) -> bool:
                if not _is(s, "outcome"):
                    return False
                try:
                    o = session.open(s.body.get("box"))
                except MalformedError:
                    return False  # not theirs: anyone may publish here
                if isinstance(o, dict) and o.get("kind") == "outcome" and isinstance(o.get("matched"), bool):
                    heard.append(o)
                    return True
                return False

            until = asyncio.get_running_loop().time() + OUTCOME_WAIT
            try:
                await rendezvous.wait_for(nc, self.theirs, self.seen, theirs, until=until, what="their outcome")
            except rendezvous.Waited:
                return "the other side did not finish its ceremony in time"
            o = heard[0]
            if o["matched"]:
                return None
            said = o.get("why") if isinstance(o.get("why"), str) else ""
            return f"the other side did not confirm ({said or 'gave up'})"

        return self._run(step)


class Inviter(_Side):
    """`gage invite`: make the offer, take one join, answer it."""

    def __init__(self, url: str, creds: str | None, code: Code | None, expires: float) -> None:
        self.chosen = code is not None
        super().__init__(url, creds, code or rendezvous.new_code(), "i")
        self.expires = expires
        self.pake = SPAKE2_A(b"", idA=ID_A, idB=ID_B)
        self.offer_seq = 0
        self.deadline = 0.0

    def open(self) -> Code:
        """Publish the offer under a number nobody's live offer holds; the code to read to them."""

        async def step(nc: Client) -> Code:
            for tries in range(40):
                if not _live_offer(await rendezvous.last(nc, self.code.subject("i"))):
                    break
                if self.chosen:
                    raise InviteRefused(f"the code number {self.code.nameplate} is in use by another invite on this relay: choose another")
                # Short numbers first; a busy relay gets longer ones.
                self.code = rendezvous.new_code(secrets.randbelow(99 if tries < 10 else rendezvous.MAX_NAMEPLATE) + 1)
            else:
                raise RelayError("no free invite number on this relay: try again in a minute")
            self.mine, self.theirs = self.code.subject("i"), self.code.subject("j")
            self.pake = SPAKE2_A(self.code.text.encode(), idA=ID_A, idB=ID_B)
            offer = _msg("offer", pake=self.pake.start().hex(), ttl=int(self.expires))
            self.offer_seq = await rendezvous.say(nc, self.mine, offer)
            self.seen = self.offer_seq
            self.deadline = time.time() + self.expires
            return self.code

        return self._run(step)

    def wait_join(self, mine: Claims) -> Claims:
        """The first join after the offer, and only it: the code is spent whichever way it goes."""

        async def step(nc: Client) -> Claims:
            until = asyncio.get_running_loop().time() + max(0.0, self.deadline - time.time())
            try:
                join = await rendezvous.wait_for(nc, self.theirs, self.seen, lambda s: _is(s, "join"), until=until, what="a join")
            except rendezvous.Waited:
                await rendezvous.say(nc, self.mine, _msg("closed", why="expired"))
                raise InviteRefused("the code expired before anyone joined: nothing was swapped (run `gage invite` again)") from None
            self.seen = join.seq
            try:
                pake = join.body.get("pake")
                if not isinstance(pake, str):
                    raise ValueError
                self.session = Session(self.pake.finish(bytes.fromhex(pake)), "i")
                theirs = parse_claims(self.session.open(join.body.get("box")))
            except (ValueError, SPAKEError, MalformedError) as exc:
                await rendezvous.say(nc, self.mine, _msg("refused", to=join.seq, why="wrong code"))
                raise InviteRefused(
                    f"someone joined with a wrong code ({exc}): the code is spent and nothing was swapped; "
                    "if it was them, check the code together and run `gage invite` again"
                ) from None
            await rendezvous.say(nc, self.mine, _msg("answer", to=join.seq, box=self.session.seal(mine.to_json())))
            return theirs

        return self._run(step)


class Joiner(_Side):
    """`gage join CODE`: find the offer, send our claims sealed, read theirs."""

    def __init__(self, url: str, creds: str | None, code: Code) -> None:
        super().__init__(url, creds, code, "j")

    def meet(self, mine: Claims) -> Claims:
        async def step(nc: Client) -> Claims:
            offer = await rendezvous.last(nc, self.theirs)
            if offer is None or not _is(offer, "offer", "answer", "refused", "closed", "outcome"):
                raise InviteRefused("no invite with this code on this relay (it expired, or was never made: check the number and the relay)")
            if not _is(offer, "offer"):
                why = "it expired" if offer.body.get("kind") == "closed" else "it was already used (a code is good once)"
                raise InviteRefused(f"this code is refused: {why}. Ask them for a new one (`gage invite`); nothing was swapped")
            if not _live_offer(offer):
                raise InviteRefused("this code has expired: ask them for a new one (`gage invite`); nothing was swapped")
            pake_text = offer.body.get("pake")
            pake = SPAKE2_B(self.code.text.encode(), idA=ID_A, idB=ID_B)
            start = pake.start()
            try:
                if not isinstance(pake_text, str):
                    raise ValueError
                self.session = Session(pake.finish(bytes.fromhex(pake_text)), "j")
            except (ValueError, SPAKEError):
                raise InviteRefused("the invite under this code is not one gage made: nothing was swapped") from None
            join_seq = await rendezvous.say(nc, self.mine, _msg("join", pake=start.hex(), box=self.session.seal(mine.to_json())))
            self.seen = offer.seq

            def answer(s: Said) -> bool:
                if _is(s, "answer", "refused", "closed") and s.body.get("to") != join_seq:
                    # Another join came first (one join per code), or the inviter gave up waiting.
                    raise InviteRefused("this code was used by someone else just before you (a code is good once): "
                                        "nothing was swapped. Tell them, and ask for a new one")
                return _is(s, "answer", "refused")

            until = asyncio.get_running_loop().time() + ANSWER_WAIT
            try:
                got = await rendezvous.wait_for(nc, self.theirs, offer.seq, answer, until=until, what="the answer")
            except rendezvous.Waited:
                raise RelayError("the inviter did not answer (is their `gage invite` still running?): nothing was confirmed") from None
            self.seen = got.seq
            if _is(got, "refused"):
                raise InviteRefused("the code did not match: the inviter's side could not open what we sent (a wrong code); "
                                    "the code is spent and nothing was swapped. Check the code together; they run `gage invite` again")
            try:
                return parse_claims(self.session.open(got.body.get("box")))
            except MalformedError as exc:
                raise InviteRefused(f"the answer under this code is not the inviter's ({exc}): nothing was confirmed") from None

        return self._run(step)
