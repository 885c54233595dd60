#!/usr/bin/env bash
# redis-py's own test suite, a third party's view of compatibility: runs the chosen
# test files against redis-server and against hotkv-server, then lists the tests that
# pass on Redis but fail on hotkv (leaving out "unknown command" failures, which are
# commands hotkv does not have: lists, hashes, Lua, ACL...).
#
#   bash scripts/redis-py-suite.sh [PYTEST-ARGS...]
#       default: tests/test_commands.py tests/test_pubsub.py tests/test_pipeline.py
#       e.g.     bash scripts/redis-py-suite.sh tests/test_commands.py --protocol=3
#
# Needs network access to PyPI (the sdist carries the tests) and redis-server. Takes a
# few minutes, so CI does not run it; DEVELOPERS.md says what its last run found.
set -euo pipefail
version=${REDIS_PY_VERSION:-5.0.8}
work=${REDIS_PY_WORK:-/tmp/redis-py-suite}
mkdir -p "$work"
if [ ! -d "$work/redis-$version" ]; then
    python3 -m pip download -q --no-deps --no-binary :all: "redis==$version" -d "$work"
    tar -xzf "$work/redis-$version.tar.gz" -C "$work"
fi
if [ ! -x "$work/venv/bin/python" ]; then
    python3 -m venv "$work/venv"
    "$work/venv/bin/pip" install -q pytest "pytest-asyncio==0.23.8" packaging mock "redis==$version"
fi
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(tests/test_commands.py tests/test_pubsub.py tests/test_pipeline.py)

. scripts/servers.sh
start_servers 7811 7812
cd "$work/redis-$version"
for side in redis:7811 hotkv:7812; do
    name=${side%%:*}
    port=${side##*:}
    "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "${args[@]}" \
        --redis-url="redis://localhost:$port/0" --junitxml="$work/$name.xml" >/dev/null 2>&1 || true
done
python3 - "$work" <<'PY'
import sys
import xml.etree.ElementTree as ET

work = sys.argv[1]


def outcomes(path):
    found = {}
    for case in ET.parse(path).iter("testcase"):
        name = case.get("classname") + "::" + case.get("name")
        state, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                state = "failed"
                message = (child.get("message") or "").replace("\n", " ")[:200]
            elif child.tag == "skipped":
                state = "skipped"
        found[name] = (state, message)
    return found


redis, hotkv = outcomes(f"{work}/redis.xml"), outcomes(f"{work}/hotkv.xml")
passed = lambda side: sum(state == "passed" for state, _ in side.values())
print(f"passed: redis-server {passed(redis)}, hotkv {passed(hotkv)} of {len(redis)}")
unknown = 0
for name, (state, message) in sorted(hotkv.items()):
    if state != "failed" or redis.get(name, ("",))[0] != "passed":
        continue
    if "unknown command" in message:
        unknown += 1
        continue
    print(f"  {name.rsplit('.', 1)[-1]} | {message}")
print(f"(and {unknown} that fail on commands hotkv does not have)")
PY
