"""hotkv-server driven by the clients people use: redis-py and redis-cli."""
import subprocess

import pytest
import redis


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_strings(server, protocol):
    r = redis.Redis(port=server, protocol=protocol)
    assert r.ping()
    assert r.set(b"k\x00\r\n", b"v\x00\r\n")
    assert r.get(b"k\x00\r\n") == b"v\x00\r\n"
    assert r.get("missing") is None
    assert r.set("nx", "1", nx=True)
    assert r.set("nx", "2", nx=True) is None
    assert r.incr("counter") == 1
    assert r.incrby("counter", 9) == 10
    assert r.decr("counter") == 9
    assert r.exists("nx", "nx", "missing") == 2
    assert r.delete("nx", "counter", "missing") == 2
    with pytest.raises(redis.ResponseError, match="unknown command 'NOPE'"):
        r.execute_command("NOPE", "a")


def test_redis_py_pipeline(server):
    r = redis.Redis(port=server)
    pipe = r.pipeline(transaction=False)
    for i in range(2000):
        pipe.set(f"p:{i}", i)
    for i in range(2000):
        pipe.get(f"p:{i}")
    replies = pipe.execute()
    assert replies[:2000] == [True] * 2000
    assert replies[2000:] == [str(i).encode() for i in range(2000)]


def cli(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_redis_cli_session(server):
    assert cli(server, "PING") == "PONG"
    assert cli(server, "SET", "greeting", "hello world") == "OK"
    assert cli(server, "GET", "greeting") == "hello world"
    assert cli(server, "INCR", "visits") == "1"
    assert cli(server, "GET", "nothing") == ""
    assert "unknown command 'frobnicate'" in cli(server, "frobnicate", "x")
    # An interactive-style session on stdin, as a user types it.
    out = subprocess.run(["redis-cli", "-p", str(server)], input="SET a 1\nINCRBY a 41\nGET a\n",
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == ["OK", "42", "42"]
