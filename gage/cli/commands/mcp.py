"""`gage mcp`: serve this home to an agent over MCP on standard input and output (needs gage[mcp]).

The SDK is loaded only here, when the command runs, so every other command starts without
it. Standard output carries the protocol: nothing else may be printed there.
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "An MCP server on standard input and output. Its tools read; none accepts, rejects or trusts."


def run(args: argparse.Namespace) -> int:
    from gage.cli.extras import mcp_extra
    from gage.cli.output import err, open_home, show

    with mcp_extra():
        from gage.mcp import server
    home = open_home(args)  # a home that is not there is an error now, not on the first call
    err(f"gage: serving {show(str(home.root))} to an MCP client on standard input and output; reading only, replies to the outbox")
    server.serve(home.root)
    return 0
