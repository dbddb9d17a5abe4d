"""A test hook, read here only: `GAGE_TEST_KILL_AT=STEP` makes the process kill itself (SIGKILL) when
a delivery or a fetch reaches STEP, so tests can show that a kill at any step of a send leaves the delivery
queued or done (spec/relay.md, "The outbox"), and one in a fetch's batch leaves each envelope landed and
journaled, or waiting on the relay, never lost or doubled. Unset in normal use, and then it costs one lookup."""

from __future__ import annotations

import os
import signal

ENV = "GAGE_TEST_KILL_AT"
# The steps, in the order a delivery passes them.
STEPS = ("queued", "sealing", "publishing", "acknowledged", "journaled")
# And a fetch's batch: landed and journaled, nothing acknowledged; one acknowledged, the rest not.
FETCH_STEPS = ("fetch-landed", "fetch-acked")


def kill_at(step: str) -> None:
    if os.environ.get(ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
