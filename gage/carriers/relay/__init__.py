"""Across machines: sealed delivery through a mailbox relay on NATS JetStream, and a directory.

A carrier, like gage.carriers.a2a: what it brings lands through the one import (gage.carriers.relay.landing)
and nothing it says is trust. Needs the optional extra `gage[relay]` (nats-py, pyrage, nkeys, bcrypt);
only this package imports them, so the rest of gage runs without. Modules:

- envelope: the bundle as a strict, streamed plaintext (format only)
- seal: age sealing and opening (pyrage)
- mailbox: mailboxes on the relay: create, publish, fetch with ack after import (nats-py)
- connection: one connection to the relay, with this home's credential (creds: files, never URLs)
- streams: the mailbox, bucket and directory streams, made so a publish can only add
- relayconf: `gage relay config`, the server configuration of a shared relay (an account per person)
- landing: an opened envelope into inbox/pending, or journaled and dropped
- deliver: `gage deliver`, sealed to a confirmed contact's bound sealing key
- record, directory: the directory record (format) and the JetStream key-value directory
- server: the real nats-server on 127.0.0.1 (`gage relay dev`, tests)

See spec/relay.md and threat-model.md.
"""
