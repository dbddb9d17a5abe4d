"""The optional extras a command can need (relay, a2a, mcp), and the error that names the one missing.

A command imports an extra's module by name inside its `run`, within `with relay_extra():` (or
`a2a_extra()`, `mcp_extra()`): mypy types the module and import-linter sees the edge, and a
missing library is a usage error (exit 2) saying what to install, never a traceback. Only the
import goes inside the `with`: an ImportError raised later, by the command's own work, is not
a missing extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gage import __version__
from gage.format.errors import UsageError

# What works today: the distribution is not on the package index yet (README, "Install it").
A2A_INSTALL = (
    "From a checkout: pip install -e '.[a2a]'; from a wheel: "
    f"pip install 'dist/gage_bundles-{__version__}-py3-none-any.whl[a2a]'; "
    "with pipx: pipx inject gage-bundles 'a2a-sdk[http-server]>=1.3,<2' uvicorn httpx"
)


@contextmanager
def relay_extra() -> Iterator[None]:
    """Around importing gage.carriers.relay's modules that need nats-py and pyrage."""
    try:
        yield
    except ImportError as exc:
        raise UsageError(
            f"this command needs the optional relay extra ({exc.name or exc} is not installed): pip install 'gage-bundles[relay]'"
        ) from None


@contextmanager
def a2a_extra() -> Iterator[None]:
    """Around importing gage.carriers.a2a.server or .client, which need the A2A SDK."""
    try:
        yield
    except ImportError as exc:
        raise UsageError(f"serve and send need the optional A2A extra ({exc.name or exc} is not installed). {A2A_INSTALL}") from None


@contextmanager
def mcp_extra() -> Iterator[None]:
    """Around importing gage.mcp.server, which needs the MCP SDK."""
    try:
        yield
    except ImportError as exc:
        raise UsageError(
            f"gage mcp needs the optional MCP extra ({exc.name or exc} is not installed): pip install 'gage-bundles[mcp]'"
        ) from None
