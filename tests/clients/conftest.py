"""Starts the release hotkv-server on a free port for client tests."""
import os
import subprocess
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, "target", "release", "hotkv-server")


# The engine under test: memory by default; scripts/test.sh also runs lsm.
ENGINE = os.environ.get("HOTKV_TEST_ENGINE", "memory")


def start_hotkv(*args):
    """Starts hotkv-server with `args` on a free port; returns the process and port."""
    proc = subprocess.Popen(
        [BINARY, "--port", "0", *args],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RUST_LOG": "info"},
    )
    port = None
    for line in proc.stderr:
        for word in line.split():
            if word.startswith("addr="):
                port = int(word.rsplit(":", 1)[1])
        if port:
            break
    assert port, "hotkv-server exited before it was ready"
    # Keep draining the log so the server never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port


def stop_hotkv(proc):
    proc.terminate()
    assert proc.wait(timeout=10) == 0, "hotkv-server did not shut down cleanly on SIGTERM"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, port = start_hotkv("--engine", ENGINE, "--dir", str(tmp_path_factory.mktemp("hotkv-data")))
    yield port
    stop_hotkv(proc)
