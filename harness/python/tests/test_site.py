# SPDX-License-Identifier: MIT
"""Where a spawn was made: the pure part (a stack to the test's frame, the innermost frame of
the caller's code and the call it made), the environment entries and the per-identity table."""
from __future__ import annotations

import os

import pytest

from reaper import _site
from reaper._site import Frame, Registry, Site, parse, site_of
from reaper._siteenv import with_env

LIB = ("/usr/lib/python3.11/",)
OWN = os.path.join(os.path.dirname(os.path.abspath(_site.__file__)), "pytest_plugin.py")
TEST = "/src/tests/test_x.py"


def stack(*frames):
    return [(f, line, fn, mod) for f, line, fn, mod in frames]


PYTEST = ("/usr/lib/python3/dist-packages/_pytest/python.py", 195, "pytest_pyfunc_call", "_pytest.python")


def test_a_helper_module_gives_the_innermost_frame_and_the_test_frame_and_the_call():
    frames = stack((OWN, 600, "_HostChildren._sited", "reaper.pytest_plugin"),
                   (LIB[0] + "subprocess.py", 1900, "Popen._execute_child", "subprocess"),
                   (LIB[0] + "subprocess.py", 1024, "Popen.__init__", "subprocess"),
                   ("/src/tests/helpers.py", 30, "start_server", "helpers"),
                   (TEST, 12, "test_y", "test_x"), PYTEST)
    got = site_of(frames, TEST, "os.posix_spawn", lambda p: os.path.relpath(p, "/src"), library=LIB)
    assert got == Site(Frame("tests/test_x.py", 12, "test_y"), Frame("tests/helpers.py", 30, "start_server"),
                       "subprocess.Popen")
    assert got.text() == "tests/test_x.py:12 in test_y; tests/helpers.py:30 in start_server, via subprocess.Popen"
    assert got.env() == {"REAPER_STARTED_AT": "tests/test_x.py:12:test_y",
                         "REAPER_STARTED_IN": "tests/helpers.py:30:start_server"}
    assert got.spot == Frame("tests/test_x.py", 12, "test_y")


def test_a_direct_call_of_the_intercepted_function_is_named_by_it():
    frames = stack((OWN, 600, "_HostChildren._sited", "reaper.pytest_plugin"),
                   (OWN, 700, "install.<locals>.wrapper", "reaper.pytest_plugin"),
                   (TEST, 20, "TestC.test_fork", "test_x"), PYTEST)
    got = site_of(frames, TEST, "os.fork", library=LIB)
    assert got == Site(Frame(TEST, 20, "TestC.test_fork"), Frame(TEST, 20, "TestC.test_fork"), "os.fork")
    assert got.text() == f"{TEST}:20 in TestC.test_fork, via os.fork"


def test_a_function_of_the_library_is_named_with_its_module():
    frames = stack((LIB[0] + "subprocess.py", 1024, "Popen.__init__", "subprocess"),
                   (LIB[0] + "subprocess.py", 548, "run", "subprocess"),
                   (TEST, 5, "test_run", "test_x"))
    assert site_of(frames, TEST, library=LIB).via == "subprocess.run"


def test_a_fixture_in_conftest_has_no_test_frame():
    frames = stack((LIB[0] + "subprocess.py", 1024, "Popen.__init__", "subprocess"),
                   ("/src/tests/conftest.py", 8, "server", "conftest"), PYTEST)
    got = site_of(frames, TEST, library=LIB)
    assert got == Site(None, Frame("/src/tests/conftest.py", 8, "server"), "subprocess.Popen")
    assert got.env() == {"REAPER_STARTED_AT": None, "REAPER_STARTED_IN": "/src/tests/conftest.py:8:server"}
    assert got.spot == got.innermost and got.text() == "/src/tests/conftest.py:8 in server, via subprocess.Popen"


def test_the_library_site_packages_and_frozen_frames_are_not_the_callers():
    frames = stack(("<frozen runpy>", 88, "_run_code", "runpy"),
                   ("/opt/venv/lib/python3.11/site-packages/thing/x.py", 3, "spawn", "thing.x"),
                   ("/usr/lib/python3/dist-packages/y.py", 3, "spawn", "y"),
                   (LIB[0] + "os.py", 3, "spawn", "os"), (OWN, 1, "f", "reaper.pytest_plugin"))
    assert site_of(frames, TEST, library=LIB) is None
    assert not _site.is_user(_site.__file__)  # the package itself, with the real library list
    assert not _site.is_user(os.__file__)
    assert _site.is_user(__file__)


def test_a_frame_value_is_parsed_from_the_right():
    assert parse("a:b.py:12:f") == Frame("a:b.py", 12, "f")
    for bad in ("", None, "f.py:x:f", "12:f", ":12:f"):
        assert parse(bad) is None
    assert parse(Frame("t.py", 3, "test_a").env()) == Frame("t.py", 3, "test_a")


def test_the_environment_gets_the_site_in_each_form(monkeypatch):
    site = Site(Frame("t.py", 3, "test_a"), Frame("h.py", 9, "start"), "subprocess.Popen")
    monkeypatch.setenv("REAPER_STARTED_AT", "outer.py:1:test_outer")
    # a copy of os.environ's value is replaced
    lst = with_env([b"A=1", b"REAPER_STARTED_AT=outer.py:1:test_outer"], site)
    assert lst == [b"A=1", b"REAPER_STARTED_AT=t.py:3:test_a", b"REAPER_STARTED_IN=h.py:9:start"]
    # one the caller set itself is kept (a harness that knows its own line)
    assert with_env([b"REAPER_STARTED_AT=mine.py:2:f"], site) == [b"REAPER_STARTED_AT=mine.py:2:f",
                                                                  b"REAPER_STARTED_IN=h.py:9:start"]
    assert with_env({"REAPER_STARTED_IN": "mine.py:2:f"}, site)["REAPER_STARTED_IN"] == "mine.py:2:f"
    assert with_env({"A": "1"}, site) == {"A": "1", "REAPER_STARTED_AT": "t.py:3:test_a",
                                          "REAPER_STARTED_IN": "h.py:9:start"}
    assert with_env({b"A": b"1"}, site)[b"REAPER_STARTED_IN"] == b"h.py:9:start"
    inherited = with_env(None, site)  # os.environ, its outer site replaced
    assert b"REAPER_STARTED_AT=t.py:3:test_a" in inherited and b"REAPER_STARTED_AT=outer.py:1:test_outer" not in inherited
    # a spawn with no frame of the caller's: no site an ancestor of pytest's carried is its
    assert not any(e.startswith(b"REAPER_STARTED") for e in with_env(None, Site(None, None, None)))


def test_the_registry_knows_a_child_by_identity_and_its_descendants_by_ancestry_or_frames():
    reg = Registry()
    site = Site(Frame("t.py", 3, "test_a"), Frame("t.py", 3, "test_a"), "os.fork")
    reg.record(100, 5000, site, "m-1")
    assert reg.of(100, 5000) == site
    assert reg.of(100, 4999) is None  # another process under the same pid, started before
    # what the forked child forked without exec: its ancestry names it
    assert reg.of(200, 5100, "100 python3 < 1 init") == site
    # a shell's background job, the shell gone: its environment's frames, and the shell's call
    shell = Site(Frame("t.py", 7, "test_b"), Frame("t.py", 7, "test_b"), "subprocess.run")
    reg.record(300, 6000, shell, "m-2")
    got = reg.of(301, 6001, "1 init", Frame("t.py", 7, "test_b"), Frame("t.py", 7, "test_b"))
    assert got == shell
    # frames no spawn of ours made: said as the environment says them, with no call
    other = reg.of(400, 7000, "", None, Frame("x.py", 1, "f"))
    assert other == Site(None, Frame("x.py", 1, "f"), None)
    reg.forget("m-1")
    assert reg.of(100, 5000) is None and reg.of(301, 6001, "", shell.test_frame, shell.innermost) == shell
    assert reg.of(500, 1) is None


@pytest.mark.parametrize("depth", [0, 1])
def test_here_finds_this_file(depth):
    def spawn():
        return _site.here(__file__, "os.fork", os.path.dirname(__file__), depth)
    got = spawn()
    assert got.test_frame.file == os.path.basename(__file__)
    assert got.test_frame.function == "test_here_finds_this_file" if depth else "test_here_finds_this_file.<locals>.spawn"


def test_a_forked_childs_records_reach_the_sessions_process():
    reg = Registry()
    reg.open("/src", b"A=1\0REAPER_STARTED_AT=outer.py:1:t\0")
    try:
        assert reg.inherited == (Frame("outer.py", 1, "t"), None)
        site = Site(Frame("t.py", 3, "test_a"), Frame("t.py", 4, "test_a"), "os.fork")
        pid = os.fork()
        if pid == 0:
            try:
                reg.record(4321, 99, site, "m-1")
            finally:
                os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
        assert reg.by_id == {}  # only in the file until a lookup needs it
        assert reg.of(4321, 99) == site
        # what pytest's own environment carries is nobody's site here
        assert reg.of(5, 5, "", Frame("outer.py", 1, "t"), None) is None
    finally:
        reg.close()
    assert reg.log is None and reg.by_id == {}


def test_the_api_reads_the_site_a_process_was_started_with(spawner):
    import reaper
    pid, _, _ = spawner.start(env=spawner.env(REAPER_STARTED_AT="tests/t:x.py:12:test_y",
                                              REAPER_STARTED_IN="tests/helpers.py:30:start_server"))
    # not FILE:LINE:FUNCTION: no site (the values, the caller's own, win over a plugin's)
    bare, _, _ = spawner.start(env=spawner.env(REAPER_STARTED_AT="garbage", REAPER_STARTED_IN="f.py:x:g"))
    from conftest import TAG_VAR
    procs = {p.pid: p for p in reaper.reap_report(reaper.with_env(TAG_VAR, spawner.tag), timeout=0).processes}
    assert procs[pid].started_at == Frame("tests/t:x.py", 12, "test_y") == ("tests/t:x.py", 12, "test_y")
    assert procs[pid].started_in == Frame("tests/helpers.py", 30, "start_server")
    assert procs[bare].started_at is None and procs[bare].started_in is None
    assert procs[pid].as_dict()["started_in"] == ("tests/helpers.py", 30, "start_server")
