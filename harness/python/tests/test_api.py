# SPDX-License-Identifier: MIT
"""The Python API against real processes: sandbox HOME, setsid daemons, TERM-ignorers,
processes that exit in time, zombies, descendants, env markers."""
from __future__ import annotations

import ctypes
import inspect
import os
import subprocess
import sys
import threading
import time

import pytest

import reaper
from conftest import TAG_VAR, with_tag, zombie_children
from procutil import running, stat, when_pinned

# A hand-written _reaper.py to compare the calls with (optional: REAPER_HANDWRITTEN=PATH).
HANDWRITTEN = os.environ.get("REAPER_HANDWRITTEN", "")


@pytest.fixture
def adopting():
    reaper.adopt_orphans()
    yield
    reaper.release_orphans()


def wait_adopted(pid: int) -> None:
    """The middle of a double fork may still be exiting: wait until pid is ours."""
    deadline = time.monotonic() + 30
    while stat(pid)["ppid"] != os.getpid():
        assert time.monotonic() < deadline, f"{pid} was never adopted"
        time.sleep(0.005)


def subreaper_flag() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    v = ctypes.c_int(-1)
    assert libc.prctl(37, ctypes.byref(v), 0, 0, 0) == 0  # PR_GET_CHILD_SUBREAPER
    return v.value


def test_library_found_in_build_tree_or_as_told():
    assert os.path.exists(reaper.library_path) or reaper.library_path.startswith("libreaper")
    code = "import reaper; print(reaper.library_path)"
    env = dict(os.environ, REAPER_LIBRARY=reaper.library_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == reaper.library_path
    env["REAPER_LIBRARY"] = "/nonexistent/libreaper.so"
    # importing works (the pytest plugin is imported by every pytest run once installed);
    # the first call that needs the library says what was tried
    imp = subprocess.run([sys.executable, "-c", "import reaper, reaper.pytest_plugin"], env=env,
                         capture_output=True, text=True)
    assert imp.returncode == 0, imp.stderr
    bad = subprocess.run([sys.executable, "-c", "import reaper; reaper.adopted()"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode != 0
    assert "cannot load libreaper" in bad.stderr and "/nonexistent/libreaper.so" in bad.stderr


def test_adoption_is_refcounted_and_turns_the_subreaper_flag():
    before = reaper.adopted()
    reaper.adopt_orphans()
    reaper.adopt_orphans()
    assert reaper.adopted() == before + 2 and subreaper_flag() == 1
    reaper.release_orphans()
    assert subreaper_flag() == 1
    reaper.release_orphans()
    assert reaper.adopted() == before
    assert subreaper_flag() == (1 if before else 0)


def test_sandbox_home_setsid_daemon_is_killed_and_reported(spawner, tmp_path, adopting):
    home = tmp_path / "home"
    home.mkdir()
    pid, start, cmd = spawner.start("--daemon", env=spawner.env(HOME=str(home)))
    wait_adopted(pid)
    held = set(zombie_children())
    control, cstart, _ = spawner.start()  # same tag, another HOME: not the sandbox's
    leaked = reaper.reap(reaper.with_home(home), timeout=0.5)
    assert leaked == [f"{pid}: {cmd[:160]}"]  # a hand-written _reaper.py's format
    assert not running(pid, start)
    assert running(control, cstart), "a process with another HOME was touched"
    assert set(zombie_children()) <= held and pid not in zombie_children()


def test_term_ignorer_is_killed(spawner, adopting):
    pid, start, cmd = spawner.start("--daemon", "--ignore-term")
    wait_adopted(pid)
    rep = reaper.reap_report(reaper.with_env(TAG_VAR, spawner.tag), timeout=0.2, grace=0.3)
    (p,) = rep.processes
    assert (p.pid, p.start_time, p.cmdline, p.fate) == (pid, start, cmd, "killed")
    assert p.leaked and rep.escalated and rep.lines() == [f"{pid}: {cmd[:160]}"]
    assert p.found_by == (f"env {TAG_VAR}={spawner.tag}",)
    assert p.cwd == os.getcwd() and p.state in "SR" and p.exe.endswith(os.path.basename(os.path.realpath(sys.executable)))
    assert not running(pid, start) and pid not in zombie_children()


def test_process_exiting_in_time_is_not_reported(spawner):
    gate = spawner.tmp / "gate"
    pid, start, _ = spawner.start("--until", str(gate))
    when_pinned({pid}, gate.touch)  # it exits while the reap waits for it
    t0 = time.monotonic()
    rep = reaper.reap_report(reaper.with_env(TAG_VAR, spawner.tag), timeout=60)
    assert time.monotonic() - t0 < 50, "reap waited for the deadline instead of the exit"
    assert rep.leaks == [] and rep.lines() == []
    assert [(p.pid, p.fate) for p in rep.processes] == [(pid, "exited")]
    assert not rep.escalated
    assert reaper.reap(reaper.with_env(TAG_VAR, spawner.tag), timeout=5) == []


def test_no_zombies_left_after_many_adopted_orphans(spawner, adopting):
    gate = spawner.tmp / "gate"
    got = {spawner.start("--daemon")[:2] for _ in range(5)}
    gated = {spawner.start("--daemon", "--until", str(gate))[:2] for _ in range(3)}
    got |= gated
    for p, _ in got:
        wait_adopted(p)
    held = set(zombie_children())  # the middles of the double forks: the test's to collect
    when_pinned({p for p, _ in gated}, gate.touch)  # three exit by themselves while reap waits
    rep = reaper.reap_report(reaper.with_env(TAG_VAR, spawner.tag), timeout=5.0)
    assert sorted(p.fate for p in rep.processes) == ["exited"] * 3 + ["killed"] * 5
    assert with_tag(spawner.tag) == []
    assert set(zombie_children()) <= held, "an adopted orphan's zombie was left"
    assert not {p for p, _ in got} & set(zombie_children())


def test_descendants_finds_the_tree_and_only_it(spawner):
    # sh runs a child and a grandchild; nothing of them carries a marker the finder uses
    pidfile = spawner.tmp / "gc.pid"
    sh = subprocess.Popen(["sh", "-c", f'{sys.executable} {spawner.tmp}/../x 2>/dev/null; '
                           f'sh -c "echo \\$\\$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; exec sleep 600" & wait'],
                          env=spawner.env())
    from conftest import wait_file
    gc = wait_file(pidfile)
    outsider, ostart, _ = spawner.start()  # our child too, but not under sh
    mine = {p.pid for p in reaper.scan(reaper.descendants(sh.pid)).processes}
    assert gc in mine and sh.pid not in mine and outsider not in mine
    everything = {p.pid for p in reaper.scan(reaper.descendants()).processes}
    assert {sh.pid, gc, outsider} <= everything
    found = reaper.descendants(sh.pid)()
    assert (gc, stat(gc)["start"]) in found and found[(gc, stat(gc)["start"])].startswith("sleep")
    leaked = reaper.reap(reaper.descendants(sh.pid), timeout=0)
    assert any(line.startswith(f"{gc}: sleep 600") for line in leaked)
    assert sh.wait(timeout=30) is not None
    assert running(outsider, ostart)


def test_with_env_matches_exact_entries_only(spawner):
    pid, start, _ = spawner.start()
    near = spawner.env(**{TAG_VAR: spawner.tag + "x"})
    other, ostart, _ = spawner.start(env=near)
    found = reaper.with_env(TAG_VAR, spawner.tag)()
    assert list(found) == [(pid, start)]
    assert reaper.reap(reaper.with_env(TAG_VAR, spawner.tag), timeout=0) != []
    assert not running(pid, start) and running(other, ostart)


def test_with_env_origin_matches_only_what_started_since(spawner):
    before, bstart, _ = spawner.start()
    time.sleep(0.05)  # start times count in clock ticks: the origin is a tick later
    origin = reaper.origin_now()
    after, astart, _ = spawner.start()
    assert sorted(reaper.with_env(TAG_VAR, spawner.tag, origin=origin)()) == [(after, astart)]
    assert sorted(reaper.with_env(TAG_VAR, spawner.tag)()) == sorted([(before, bstart), (after, astart)])
    with pytest.raises(TypeError):
        reaper.with_env(TAG_VAR, spawner.tag, origin=123)


def test_allow_and_keep_patterns(spawner):
    a, astart, acmd = spawner.start("--sleep", "601")
    k, kstart, kcmd = spawner.start("--sleep", "602")
    rep = reaper.reap_report(reaper.with_env(TAG_VAR, spawner.tag), timeout=0,
                             allow=["*--sleep 601*"], keep=["*--sleep 602*"])
    by_pid = {p.pid: p for p in rep.processes}
    assert by_pid[a].allowed and by_pid[a].fate == "killed" and not by_pid[a].leaked
    assert by_pid[k].fate == "kept" and not by_pid[k].leaked
    assert rep.leaks == [] and rep.pattern_hits == (1, 1)
    assert not running(a, astart) and running(k, kstart)


def test_report_carries_the_test_name(spawner):
    pid, _, _ = spawner.start(env=spawner.env(REAPER_TEST="suite::test_x"))
    (p,) = reaper.reap_report(reaper.with_env(TAG_VAR, spawner.tag), timeout=0).processes
    assert p.pid == pid and p.test == "suite::test_x"
    assert p.as_dict()["test"] == "suite::test_x" and p.as_dict()["leaked"] is True


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError):
        reaper.with_env("A=B", "x")
    with pytest.raises(ValueError):
        reaper.with_env("", "x")
    with pytest.raises(ValueError):
        reaper.descendants(-3)
    with pytest.raises(TypeError, match="not a reaper finder"):
        reaper.reap("HOME=/x", timeout=0)  # a callable is one (test_compat.py); a string is not
    with pytest.raises(ValueError):
        reaper.reap_report(reaper.descendants(), timeout=-1)
    with pytest.raises(ValueError, match="NUL"):
        reaper.reap_report(reaper.descendants(), timeout=0, allow=["*\0never"])
    with pytest.raises(ValueError, match="NUL"):
        reaper.reap_report(reaper.descendants(), timeout=0, keep=["\0"])
    # a release without an adopt is harmless; the adoptions in force (the plugin's, when this
    # suite runs under it) are put aside first, or the extra release would end one of them
    held = reaper.adopted()
    for _ in range(held):
        reaper.release_orphans()
    reaper.release_orphans()
    assert reaper.adopted() == 0
    for _ in range(held):
        reaper.adopt_orphans()


def calls(module) -> dict:
    return {name: [(p.name, p.kind, p.default) for p in inspect.signature(getattr(module, name)).parameters.values()]
            for name in ("adopt_orphans", "release_orphans", "with_home", "reap")}


def test_same_calls_as_a_handwritten_reaper():
    """The drop-in contract: the calls a hand-written _reaper.py offers, spelled out."""
    P = inspect.Parameter
    assert calls(reaper) == {
        "adopt_orphans": [], "release_orphans": [],
        "with_home": [("home", P.POSITIONAL_OR_KEYWORD, P.empty)],
        "reap": [("finders", P.VAR_POSITIONAL, P.empty), ("timeout", P.KEYWORD_ONLY, 30.0)]}
    assert reaper.REAP_TIMEOUT == 30.0


@pytest.mark.skipif(not os.path.isfile(HANDWRITTEN),
                    reason="no hand-written reaper to compare with: set REAPER_HANDWRITTEN=/path/to/_reaper.py")
def test_same_calls_as_the_given_handwritten_reaper():
    import importlib.util
    spec = importlib.util.spec_from_file_location("handwritten_reaper", HANDWRITTEN)
    theirs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(theirs)
    assert calls(reaper) == calls(theirs)
    assert reaper.REAP_TIMEOUT == theirs.REAP_TIMEOUT


def test_incomplete_result_raises(tmp_path):
    """A scan that has no descriptor left to read /proc with says so: ReaperIncomplete
    (errno EMFILE) carrying what it did find, never a quiet empty answer."""
    code = r"""
import errno, os, sys
import reaper
held = []
try:
    while True:
        held.append(os.dup(2))
except OSError:
    pass
for fd in held[-3:]:  # /proc, its listing and the epoll instance: nothing left for a read
    os.close(fd)
try:
    rep = reaper.scan(reaper.with_env("REAPER_NO_SUCH", "1"))
except reaper.ReaperIncomplete as e:
    assert e.errno == errno.EMFILE, e
    assert isinstance(e.report, reaper.ReapReport)
    print("incomplete:", e)
    sys.exit(0)
print("no exception; report", rep)
sys.exit(1)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "incomplete" in r.stdout
