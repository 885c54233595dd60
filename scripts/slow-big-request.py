#!/usr/bin/env python3
"""Server CPU for one big request that arrives slowly: an MSET of N pairs sent in
CHUNK-byte pieces 0.5 ms apart (a client on a slow link), and the same MSET sent at
once. Prints the server's CPU time (utime + stime from /proc) for each.

    python3 scripts/slow-big-request.py PORT PID N [CHUNK]
"""
import socket
import sys
import time


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line, 12 and 13 after ")".
    return (int(fields[11]) + int(fields[12])) / 100.0


def mset(n):
    parts = [b"*%d\r\n$4\r\nMSET\r\n" % (1 + 2 * n)]
    for i in range(n):
        key = b"key:%d" % i
        parts.append(b"$%d\r\n%s\r\n$1\r\nv\r\n" % (len(key), key))
    return b"".join(parts)


def send(port, request, chunk):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(0, len(request), chunk):
        s.sendall(request[i:i + chunk])
        if chunk < len(request):
            time.sleep(0.0005)
    s.settimeout(300)
    reply = s.recv(100)
    assert reply == b"+OK\r\n", reply
    s.close()


def main():
    port, pid, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    chunk = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
    request = mset(n)
    for label, size in ((f"in {chunk}-byte pieces", chunk), ("at once", len(request))):
        before = cpu_seconds(pid)
        send(port, request, size)
        print(f"port {port}: MSET of {n} pairs ({len(request)} bytes) {label}: "
              f"{cpu_seconds(pid) - before:.2f} s of server CPU")


if __name__ == "__main__":
    main()
