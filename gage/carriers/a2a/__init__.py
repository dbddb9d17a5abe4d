"""A2A as one more carrier for bundles.

`artifact` (the format: `wire`, `export`, `reader`, `landing`) and `card` (agent cards as
claims) are core: plain Python, no SDK. `server` (with its SDK-free `gatekeeper`) and
`client` (serve and send) need the optional extra `gage[a2a]` and are imported only by
the commands that use them, so the rest of gage never loads the SDK. See spec/a2a.md.
"""
