"""A2A as one more carrier for bundles.

`artifact` (the format) and `card` (agent cards as claims) are core: plain Python, no
SDK. `live` (serve and send) needs the optional extra `gage[a2a]` and is imported only
by the commands that use it, so the rest of gage never loads the SDK. See spec/a2a.md.
"""
