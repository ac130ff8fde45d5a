# SPDX-License-Identifier: MIT
"""The rest of what hand-written reaper modules offer: a callable finder returning
{(pid, start_time): cmdline} is pinned and verified by the library like its own matches, and
stat / start_time / cmdline / all_stats / kill_identified keep their meanings."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import reaper
from procutil import running, stat as proc_stat


def tag_finder(tag: str, calls: list):
    """A finder written the hand-written way: every live process whose cmdline holds tag."""
    def find():
        calls.append(1)
        return {(pid, reaper.start_time(pid)): reaper.cmdline(pid) for pid in reaper.all_stats()
                if tag in reaper.cmdline(pid) and pid != os.getpid()}
    return find


def test_callable_finder_is_reaped_by_the_library(spawner):
    pid, start, _ = spawner.start("--daemon")
    calls = []
    leaked = reaper.reap(tag_finder(spawner.tag, calls), timeout=0.2)
    assert len(leaked) == 1 and leaked[0].startswith(f"{pid}: ") and "leaker.py --daemon" in leaked[0]
    assert not running(pid, start)
    assert calls  # the library called it at its scans
    rep = reaper.reap_report(tag_finder(spawner.tag, []), timeout=0)
    assert rep.processes == ()


def test_callable_finder_naming_a_process_gone_between_its_reads_is_no_error(spawner):
    """start_time() of a process that went between the finder's reads is None: that entry
    names nothing left, the others are reaped."""
    pid, start, _ = spawner.start("--daemon")
    gone = subprocess.Popen(["true"])
    gone.wait()
    leaked = reaper.reap(lambda: {(gone.pid, reaper.start_time(gone.pid)): "true", (pid, start): "x"}, timeout=0.2)
    assert len(leaked) == 1 and leaked[0].startswith(f"{pid}: "), leaked
    assert not running(pid, start)


def test_callable_finder_identity_with_another_start_time_is_left_alone(spawner):
    pid, start, _ = spawner.start("--daemon")
    stale = lambda: {(pid, start + 1): "not this one"}  # noqa: E731 - the pid, another process
    rep = reaper.reap_report(stale, timeout=0)
    assert rep.processes == () and running(pid, start)
    # with its true start time the same pid is found, and found_by names the callable
    rep = reaper.reap_report(lambda: {(pid, start): "x"}, timeout=0, report_only=True)
    (p,) = rep.processes
    assert p.pid == pid and p.start_time == start and p.found_by[0].startswith("call ")
    assert running(pid, start)


def test_callable_finder_beside_library_finders(spawner, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    a_pid, a_start, _ = spawner.start("--daemon", env=spawner.env(HOME=str(home)))
    b_pid, b_start, _ = spawner.start("--daemon")
    rep = reaper.reap_report(reaper.with_home(home), lambda: {(b_pid, b_start): "b"}, timeout=0)
    assert {p.pid for p in rep.leaks} == {a_pid, b_pid}
    assert not running(a_pid, a_start) and not running(b_pid, b_start)


def test_error_in_a_callable_finder_reaches_the_caller():
    def broken():
        raise RuntimeError("finder broke")
    with pytest.raises(RuntimeError, match="finder broke"):
        reaper.reap(broken, timeout=0)


def test_many_identities_from_one_call(spawner):
    pids = [spawner.start("--daemon")[:2] for _ in range(3)]
    extra = {(1 << 22) + i: 12345 for i in range(100)}  # pids that cannot exist: ignored
    ids = {**{(p, s): "x" for p, s in pids}, **{(p, s): "none" for p, s in extra.items()}}
    rep = reaper.reap_report(lambda: ids, timeout=0)
    assert {p.pid for p in rep.leaks} == {p for p, _ in pids}


def test_proc_helpers_have_the_hand_written_meanings():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "helpers-probe"])
    try:
        # Popen returns once the exec closed its error pipe, a moment before the kernel has
        # set up the new command line: wait for it (a loaded machine shows the gap)
        deadline = time.monotonic() + 30
        while not Path(f"/proc/{child.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        fields = reaper.stat(child.pid)
        assert fields[1] == str(os.getpid())  # ppid
        assert reaper.start_time(child.pid) == int(fields[19]) == proc_stat(child.pid)["start"]
        assert reaper.cmdline(child.pid).endswith("helpers-probe")
        assert child.pid in reaper.all_stats()
        cmd = reaper.cmdline(child.pid)
        ident = {(child.pid, reaper.start_time(child.pid)): cmd}
        assert reaper.kill_identified({(child.pid, int(fields[19]) + 1): "other"}) == []
        assert child.poll() is None  # another start time: not signalled
        assert reaper.kill_identified(ident) == [f"{child.pid}: {cmd[:160]}"]
        assert child.wait(timeout=10) == -9
        assert reaper.start_time(child.pid) is None and reaper.stat(child.pid) is None
        assert reaper.cmdline(child.pid) == "?"
        assert child.pid not in reaper.all_stats()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
