"""The relay's own error: the relay could not be reached or did not do what was asked."""

from __future__ import annotations

from gage.format.errors import Exit, GageError


class RelayError(GageError):
    """The relay failed us (unreachable, no such mailbox, full, timed out): exit 13.

    Nothing in the home changed; a delivery that failed was not delivered, and an envelope
    not yet landed stays on the relay to be fetched again.
    """

    stage = "relay"
    exit_code = Exit.RELAY
