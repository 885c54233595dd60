#!/usr/bin/env python3
"""A client that writes a whole pipeline before it reads any reply, as redis-py's
pipelines do: N ECHOs of SIZE bytes each way. Prints the seconds it took, or
"stuck" if no reply came within 30 s (a server that stops reading a client whose
replies wait, while the client waits to finish writing, never answers).

    python3 scripts/pipeline-written-whole.py PORT [N] [SIZE]   (defaults 5000, 10000)
"""
import socket
import sys
import time

port = int(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
size = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
value = b"v" * size
request = b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (size, value)
reply_len = len(b"$%d\r\n%s\r\n" % (size, value))

s = socket.create_connection(("127.0.0.1", port))
s.settimeout(30)
start = time.time()
try:
    s.sendall(request * n)  # the whole pipeline, nothing read yet
    want = reply_len * n
    got = 0
    while got < want:
        chunk = s.recv(1 << 20)
        if not chunk:
            sys.exit("connection closed after %d of %d bytes" % (got, want))
        got += len(chunk)
    print("%.3f" % (time.time() - start))
except socket.timeout:
    print("stuck")
