"""Starts `tern serve` for the client-stack tests: one fresh server (and data folder) per test
module, on a free loopback port. The binary is `$TERN`, or the workspace's debug build."""

import os
import pathlib
import socket
import subprocess
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_accepting(port, server, log_path):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"tern serve exited: {pathlib.Path(log_path).read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("tern serve did not accept connections within 30 s")


class Server:
    def __init__(self, port):
        self.host = "127.0.0.1"
        self.port = port
        self.user = "tern"
        self.database = "tern"

    def url(self, driver):
        """A SQLAlchemy URL (`postgresql+psycopg`, `postgresql+asyncpg`)."""
        return f"{driver}://{self.user}@{self.host}:{self.port}/{self.database}"

    @property
    def conninfo(self):
        return f"host={self.host} port={self.port} user={self.user} dbname={self.database}"


@pytest.fixture(scope="module")
def server():
    binary = os.environ.get("TERN") or str(ROOT / "target" / "debug" / "tern")
    if not os.path.exists(binary):
        pytest.skip(f"no tern binary at {binary} (cargo build -p tern-cli)")
    with tempfile.TemporaryDirectory() as work:
        port = _free_port()
        log_path = os.path.join(work, "server.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                [binary, "serve", "--data", os.path.join(work, "data"), "--listen", f"127.0.0.1:{port}", "--sync", "never"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_until_accepting(port, process, log_path)
            yield Server(port)
        finally:
            process.terminate()
            process.wait(timeout=30)
