"""`gage mcp`: serve this home to an agent over MCP on standard input and output (needs gage[mcp]).

The SDK is loaded only here, when the command runs, so every other command starts without
it. Standard output carries the protocol: nothing else may be printed there.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from gage.cli.output import err, open_home, show
from gage.format.errors import UsageError


def _sdk() -> ModuleType:
    try:
        return importlib.import_module("gage.mcp.server")
    except ImportError as exc:
        raise UsageError(
            f"gage mcp needs the optional MCP extra ({exc.name or exc} is not installed): pip install 'gage-bundles[mcp]'"
        ) from None


def cmd_mcp(args: Any) -> int:
    server = _sdk()
    home = open_home(args)  # a home that is not there is an error now, not on the first call
    err(f"gage: serving {show(str(home.root))} to an MCP client on standard input and output; reading only, replies to the outbox")
    server.serve(home.root)
    return 0
