# SPDX-License-Identifier: MIT
"""Helpers of the reaper Python suite: an independent /proc oracle and cleanup by identity.

The cleanup here does not use the library under test: it reads /proc itself (tests/procutil.py)
and signals only through a pidfd after re-checking the start time, so a test that leaves
something behind cannot hide it by the same bug that made it."""
from __future__ import annotations

import os
import secrets
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "tests"))  # procutil
from procutil import environ, kill_identified, running, stat  # noqa: E402

pytest_plugins = ["pytester"]

LEAKER = str(HERE / "leaker.py")
TAG_VAR = "REAPER_SELFTEST"


def with_tag(tag: str):
    """(pid, start) of every live process whose environ holds TAG_VAR=tag."""
    needle = f"{TAG_VAR}={tag}".encode()
    out = []
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) == os.getpid():
            continue
        s = stat(int(e))
        if needle in environ(int(e)) and s and s["state"] not in ("Z", "X"):
            out.append((int(e), s["start"]))
    return out


def running_after(tag: str, timeout: float = 30.0):
    """with_tag(tag) once each process it lists has exited, or what still runs after timeout:
    a process killed a moment ago may still be on its way out; one left running is not."""
    deadline = time.monotonic() + timeout
    while left := with_tag(tag):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return left
        pid, start = left[0]
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue  # gone already
        try:
            if running(pid, start):
                select.select([fd], [], [], remaining)  # readable once it has exited
        finally:
            os.close(fd)
    return []


def zombie_children():
    me = os.getpid()
    return [int(e) for e in os.listdir("/proc") if e.isdigit()
            and (s := stat(int(e))) and s["state"] == "Z" and s["ppid"] == me]


def wait_file(path: Path, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return int(path.read_text())
        time.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


class Spawner:
    """Starts leaker.py processes carrying this test's tag; kills leftovers at teardown."""

    def __init__(self, tmp: Path):
        self.tag = secrets.token_hex(6)
        self.tmp = tmp
        self.n = 0
        self.started = []  # (pid, start) of every worker, whatever its environment

    def env(self, **extra):
        env = dict(os.environ)
        env[TAG_VAR] = self.tag
        env.update(extra)
        return env

    def start(self, *flags, env=None, wait_pid=True):
        """Run leaker.py with flags; returns (pid of the worker, its start time, cmdline)."""
        self.n += 1
        pidfile = self.tmp / f"leaker-{self.n}.pid"
        argv = [sys.executable, LEAKER, *flags, "--pidfile", str(pidfile), f"{self.tag}-{self.n}"]
        p = subprocess.Popen(argv, env=env or self.env())
        if "--daemon" in flags:
            assert p.wait(timeout=30) == 0  # the first parent exits at once
        pid = wait_file(pidfile)
        self.started.append((pid, stat(pid)["start"]))
        return pid, self.started[-1][1], " ".join(argv)

    def cleanup(self):
        for pid, start in with_tag(self.tag) + self.started:
            kill_identified(pid, start)
        deadline = time.monotonic() + 10
        while (with_tag(self.tag) or any(running(*ps) for ps in self.started)) and time.monotonic() < deadline:
            time.sleep(0.02)
        for z in zombie_children():
            try:
                os.waitpid(z, os.WNOHANG)
            except ChildProcessError:
                pass


@pytest.fixture
def spawner(tmp_path):
    s = Spawner(tmp_path)
    yield s
    s.cleanup()
