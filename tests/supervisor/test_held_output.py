# SPDX-License-Identifier: MIT
"""A leftover holding COMMAND's stdout/stderr pipe or its pty never keeps the reader waiting
past timeout + grace + a short settle. Without the kill the leftover would
hold them for 300 s; the bounds below are only there so a hang fails instead of stalling."""
import errno
import os
import pty
import select
import time

from conftest import script

TIMEOUT, GRACE, SETTLE = 1, 1, 15

HOLDER = """
    import os, signal, time
    if os.fork() == 0:
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("holder", os.getpid(), flush=True)
        time.sleep(300)
        os._exit(0)
    time.sleep(0.3)
"""


def test_leftover_holding_stdout_and_stderr_pipes(run):
    r = run(["--timeout", str(TIMEOUT), "--grace", str(GRACE)], script(HOLDER))
    holder = int(r.line().split()[1])
    fd = os.pidfd_open(holder)
    try:
        # communicate() reads both pipes to EOF: it returns only once the holder is gone
        assert r.wait(TIMEOUT + GRACE + SETTLE) == 23, r.stderr
        assert select.select([fd], [], [], 0)[0], "the holder still runs"
    finally:
        os.close(fd)
    assert "killed" in r.stderr


def read_until_closed(master, limit):
    """Everything the pty's master gives until every slave fd is closed (EIO)."""
    out = b""
    deadline = time.monotonic() + limit
    while True:
        left = deadline - time.monotonic()
        assert left > 0, "the pty is still held open: %r" % out
        if not select.select([master], [], [], left)[0]:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError as e:
            if e.errno == errno.EIO:
                return out
            raise
        if not chunk:
            return out
        out += chunk


def test_leftover_holding_the_pty(run):
    master, slave = pty.openpty()
    try:
        r = run(["--timeout", str(TIMEOUT), "--grace", str(GRACE)], script(HOLDER),
                stdout=slave, stderr=slave)
        os.close(slave)
        slave = -1
        out = read_until_closed(master, TIMEOUT + GRACE + SETTLE)
        assert b"holder" in out
        assert r.wait(10) == 23
        assert b"killed" in out
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
