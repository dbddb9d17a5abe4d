"""gage as an MCP server (`gage mcp`, the optional extra `gage[mcp]`): agents read through the frame.

Only gage/mcp/server.py imports the `mcp` SDK; gage/mcp/answers.py and gage/mcp/reply.py
are what each tool answers, written on the core alone, so they are tested without the SDK
and the rest of gage never loads it. See spec/mcp.md.
"""
