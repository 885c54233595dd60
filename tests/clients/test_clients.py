"""hotkv-server driven by the clients people use: redis-py and redis-cli."""
import os
import pty
import re
import select
import subprocess
import time

import pytest
import redis

ENGINE = os.environ.get("HOTKV_TEST_ENGINE", "memory")


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


def interactive_cli(port, lines):
    """redis-cli at a terminal, as a user runs it: its help comes from COMMAND DOCS
    only then. TERM=dumb keeps its line editor from asking the terminal questions."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(["redis-cli", "-p", str(port)], stdin=follower, stdout=follower,
                            stderr=follower, env={**os.environ, "TERM": "dumb"})
    os.close(follower)
    os.write(leader, "".join(f"{line}\n" for line in lines + ["quit"]).encode())
    out = b""
    deadline = time.time() + 30
    while time.time() < deadline:
        ready, _, _ = select.select([leader], [], [], 1)
        if not ready:
            continue
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: redis-cli has quit
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=10) == 0
    os.close(leader)
    # Without the colours.
    return re.sub(r"\x1b\[[0-9;]*m", "", out.decode(errors="replace"))


def test_redis_cli_help_comes_from_command_docs(server):
    out = interactive_cli(server, ["help hotkeys", "help set", "help client no-evict"])
    # redis-cli's built-in help, its fallback when COMMAND DOCS fails, has no HOTKEYS.
    assert "HOTKEYS [COUNT count]" in out, out
    assert "summary: Returns the keys the index finds hottest" in out, out
    assert "SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|" in out, out
    assert "CLIENT NO-EVICT ON|OFF" in out, out
    assert "group: connection" in out, out


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_expiry_scan_and_server_commands(server, protocol):
    r = redis.Redis(port=server, protocol=protocol, client_name="pytest")
    assert r.set("ttl:k", "v", ex=100)
    assert 99 <= r.ttl("ttl:k") <= 100
    assert r.persist("ttl:k")
    assert r.ttl("ttl:k") == -1
    assert r.set("ttl:p", "v", px=20)
    time.sleep(0.05)
    assert r.get("ttl:p") is None
    assert r.getex("ttl:k", ex=50) == b"v"
    r.delete("ttl:f")
    assert r.incrbyfloat("ttl:f", 2.5) == 2.5
    r.mset({f"scan:{i}": i for i in range(500)})
    assert sorted(r.scan_iter(match="scan:*", count=17)) == sorted(f"scan:{i}".encode() for i in range(500))
    assert r.client_getname() in ("pytest", b"pytest")
    policy = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
              for k, v in r.config_get("maxmemory-policy").items()}
    assert policy == {"maxmemory-policy": "noeviction"}
    info = r.info()
    assert info["redis_version"] == "7.0.0"
    assert info["db0"]["keys"] >= 500
    if ENGINE == "memory":
        assert "hotring_splits" in r.info("hotring")
    else:
        assert r.info("engine")["engine_fsync"] == "everysec"
        assert r.info("persistence")["aof_enabled"] == 1


def test_redis_py_transactions(server):
    r = redis.Redis(port=server)
    r.set("tx:n", 0)

    def bump(pipe):
        n = int(pipe.get("tx:n"))
        pipe.multi()
        pipe.set("tx:n", n + 1)

    for _ in range(20):
        r.transaction(bump, "tx:n")
    assert r.get("tx:n") == b"20"
    with r.pipeline(transaction=True) as pipe:
        assert pipe.incr("tx:a").incr("tx:a").execute() == [1, 2]


def test_redis_cli_finds_hot_and_big_keys(server):
    """redis-cli's --hotkeys (OBJECT FREQ under an LFU policy), --bigkeys (SCAN, TYPE,
    STRLEN) and --memkeys (MEMORY USAGE) work unchanged."""
    r = redis.Redis(port=server)
    for i in range(500):
        r.set(f"scan-me:{i}", "v")
    r.set("scan-me:big", "x" * 100_000)
    pipe = r.pipeline(transaction=False)
    for _ in range(20_000):
        pipe.get("scan-me:hot")
    r.set("scan-me:hot", "v")
    pipe.execute()
    r.config_set("maxmemory-policy", "allkeys-lfu")
    try:
        # In memory from the index's heat; on lsm from Redis's LFU counters.
        hot = cli(server, "--hotkeys")
        found = [l for l in hot.splitlines() if l.startswith("hot key found")]
        assert found and found[0].endswith('keyname: "scan-me:hot"'), hot
    finally:
        r.config_set("maxmemory-policy", "noeviction")
    big = cli(server, "--bigkeys")
    assert 'Biggest string found \'"scan-me:big"\' has 100000 bytes' in big, big
    mem = cli(server, "--memkeys")
    assert '"scan-me:big"' in mem, mem


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_reads_slowlog_stats_and_saves(server, protocol):
    """What redis-py parses from SLOWLOG GET, INFO commandstats / errorstats / stats
    and LASTSAVE, and SAVE / BGSAVE on each engine."""
    r = redis.Redis(port=server, protocol=protocol, client_name="slowpoke")
    r.config_set("slowlog-log-slower-than", 0)
    try:
        r.slowlog_reset()
        r.set("slow:k", "v")
        entries = r.slowlog_get(10)
        assert r.slowlog_len() >= 2
    finally:
        r.config_set("slowlog-log-slower-than", 10000)
    set_entry = next(e for e in entries if e["command"] == b"SET slow:k v")
    assert set_entry["client_name"] in (b"slowpoke", "slowpoke")
    assert set_entry["duration"] >= 0
    assert abs(set_entry["start_time"] - time.time()) < 60
    assert [e["id"] for e in entries] == sorted((e["id"] for e in entries), reverse=True)

    with pytest.raises(redis.ResponseError):
        r.execute_command("INCR")
    stats = r.info("commandstats")
    assert stats["cmdstat_set"]["calls"] >= 1
    assert stats["cmdstat_incr"]["rejected_calls"] >= 1
    assert stats["cmdstat_config|set"]["calls"] >= 2
    assert r.info("errorstats")["errorstat_ERR"]["count"] >= 1
    info = r.info("stats")
    assert info["total_net_input_bytes"] > 0 and info["total_net_output_bytes"] > 0
    assert info["total_error_replies"] >= 1
    assert "instantaneous_ops_per_sec" in info

    before = r.lastsave()
    assert r.save()
    assert r.bgsave()
    # On the memory engine a child process saves, as Redis's does; it is done when
    # INFO says so.
    deadline = time.time() + 30
    while r.info("persistence")["rdb_bgsave_in_progress"] and time.time() < deadline:
        time.sleep(0.05)
    persistence = r.info("persistence")
    assert persistence["rdb_bgsave_in_progress"] == 0
    assert persistence["rdb_last_bgsave_status"] == "ok"
    assert r.lastsave() >= before


def test_redis_py_client_side_cache_follows_writes(server, monkeypatch):
    """redis-py's own client-side cache (RESP3, CLIENT TRACKING): cached reads are
    served locally and dropped when hotkv announces a change."""
    from redis.cache import CacheConfig
    import redis.connection

    # redis-py offers its cache only to servers reporting Redis 7.4 or later; hotkv
    # reports 7.0, the command set it implements, and tracking works as 7.0's does.
    monkeypatch.setattr(redis.connection.CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    cached = redis.Redis(port=server, protocol=3, cache_config=CacheConfig())
    writer = redis.Redis(port=server)
    writer.set("csc:a", "1")
    assert cached.get("csc:a") == b"1"
    cache = cached.get_cache()
    assert cache.size == 1
    # A second read is a cache hit: the server sees no GET for it.
    before = int(writer.info("commandstats")["cmdstat_get"]["calls"])
    assert cached.get("csc:a") == b"1"
    assert int(writer.info("commandstats")["cmdstat_get"]["calls"]) == before
    # redis-py takes in the invalidations waiting on the socket before each command:
    # one still in flight leaves the old value a moment longer, never for good.
    def soon(read, expected):
        deadline = time.time() + 5
        while read() != expected and time.time() < deadline:
            time.sleep(0.01)
        assert read() == expected

    writer.set("csc:a", "2")
    soon(lambda: cached.get("csc:a"), b"2")
    writer.mset({"csc:b": "x", "csc:c": "y"})
    assert cached.mget("csc:b", "csc:c") == [b"x", b"y"]
    writer.set("csc:b", "z")
    soon(lambda: cached.mget("csc:b", "csc:c"), [b"z", b"y"])
    writer.flushall()
    soon(lambda: cached.get("csc:a"), None)


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_scripts_and_locks(server, protocol):
    """redis-py's Lock is Lua scripts run by EVALSHA (registered with SCRIPT LOAD)."""
    r = redis.Redis(port=server, protocol=protocol)
    r.delete("n", "h")
    lock = r.lock("resource", timeout=5, blocking_timeout=1)
    assert lock.acquire()
    other = r.lock("resource", timeout=5, blocking_timeout=0.2)
    assert not other.acquire()
    assert lock.extend(5)
    lock.release()
    assert other.acquire()
    other.release()
    assert r.get("resource") is None
    incr_by = r.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    assert incr_by(keys=["n"], args=[5]) == 5
    r.script_flush()
    assert incr_by(keys=["n"], args=[2]) == 7  # reloaded after NOSCRIPT
    assert r.eval("return redis.call('HGETALL', KEYS[1])", 1, "h") == []
    r.hset("h", mapping={"f": "v"})
    assert r.eval("return redis.call('HGETALL', KEYS[1])", 1, "h") == [b"f", b"v"]
