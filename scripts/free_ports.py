#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Prints the first of N consecutive free TCP ports on 127.0.0.1, each checked by binding it; the
# base moves on when one is taken (at most 200 tries, then exit 1). For the tests that start a
# cluster whose tasks take ports BASE .. BASE + N - 1 (mpirun, mpiexec).
#   scripts/free_ports.py N
import random
import socket
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 1
for _ in range(200):
    base = random.randrange(20000, 60000)
    socks = []
    try:
        for port in range(base, base + count):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", port))
        print(base)
        sys.exit(0)
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
sys.exit("free_ports.py: no %d consecutive free ports found in 200 tries" % count)
