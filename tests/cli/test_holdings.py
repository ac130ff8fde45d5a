# SPDX-License-Identifier: MIT
"""What a leak holds, read before it is killed: the port it listens on, the run's output it
keeps open, the deleted or locked files of the sandbox. COMMAND starts the leftover and
exits once the leftover holds what the test is about, so the report can only be right if it
looked before the kill."""
import os
import shutil
import socket
import subprocess
import tempfile

import pytest

from cli_util import by_pid, load_json, on_hung_fuse, reaper
from procutil import PY, REAPER, free_port

# A leftover started by COMMAND writes its pid (and is ready) once it holds its thing;
# COMMAND waits for that file, then exits.
STARTER = r"""
import os, subprocess, sys, time
ready = sys.argv[1]
subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 start_new_session=True)
deadline = time.monotonic() + 60
while not os.path.exists(ready) and time.monotonic() < deadline:
    time.sleep(0.01)
"""


# a sleep left behind, COMMAND exiting once it is the sleep (exec'd)
SLEEP_BEHIND = 'sleep 600 %s & while [ "$(cat /proc/$!/comm)" != sleep ]; do :; done'


@pytest.fixture
def sweep(home):
    """Whatever a broken reaper left running is found by HOME and killed by the reaper
    under test's own identity checks; the test then fails on what it reported."""
    yield
    subprocess.run([REAPER, "reap", "--home", home, "--timeout", "0", "--grace", "0"], capture_output=True,
                   timeout=60)


def run_report(home, tmp_path, *command):
    """reaper run COMMAND (timeout 0, grace 5 s): (the completed reaper, its JSON report)."""
    report = str(tmp_path / "r.json")
    r = reaper("run", "--home", home, "--timeout", "0", "--grace", "5", "--report", report, "--", *command)
    return r, load_json(report)


def run_leaking(home, tmp_path, leftover, ready):
    return run_report(home, tmp_path, PY, "-c", STARTER, ready, *leftover)


def holds_line(stderr, pid):
    lines = stderr.decode().splitlines()
    i = next(n for n, x in enumerate(lines) if x.startswith("  %d LEAK " % pid))
    for x in lines[i + 1:i + 6]:  # age, started at, found by, still running, holds
        if x.strip().startswith("holds "):
            return x.strip()
    raise AssertionError("no holds line for %d in:\n%s" % (pid, stderr.decode()))


def the_leak(rep):
    (p,) = [p for p in rep["processes"] if p["leak"]]
    return p


def test_web_server_is_reported_holding_its_port(home, tmp_path, sweep):
    port = free_port()
    ready = str(tmp_path / "listening")
    server = ("import http.server, os, sys\n"
              "s = http.server.HTTPServer(('127.0.0.1', %d), http.server.SimpleHTTPRequestHandler)\n"
              "open(sys.argv[1], 'w').close()\n"
              "s.serve_forever()\n" % port)
    r, rep = run_leaking(home, tmp_path, [PY, "-c", server, ready], ready)
    assert r.returncode == 23, r.stderr
    p = the_leak(rep)
    want = "127.0.0.1:%d (listening)" % port
    assert holds_line(r.stderr, p["pid"]) == "holds " + want
    assert rep["schema"] == "reaper-report/1.2"
    h = p["holdings"]
    assert {"kind": "listening", "fd": h["held"][0]["fd"], "what": want} in h["held"], h
    assert h["summary"] == want and h["rss"] > 0 and h["cpu_time"] >= 0
    # the port is free again: the leak was killed after it was looked at
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))


def test_python_http_server_module(home, tmp_path, sweep):
    """The real `python3 -m http.server` on a free port."""
    port = free_port()
    ready = str(tmp_path / "up")
    # COMMAND waits until the port answers, then marks it ready
    waiter = ("import socket, sys, time, subprocess\n"
              "subprocess.Popen([%r, '-m', 'http.server', '%d', '--bind', '127.0.0.1'],"
              " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)\n"
              "for _ in range(3000):\n"
              "    try:\n"
              "        socket.create_connection(('127.0.0.1', %d), 1).close(); break\n"
              "    except OSError: time.sleep(0.02)\n" % (PY, port, port))
    r, rep = run_report(home, tmp_path, PY, "-c", waiter)
    assert r.returncode == 23, r.stderr
    p = the_leak(rep)
    assert "http.server" in p["cmdline"]
    assert "127.0.0.1:%d (listening)" % port in holds_line(r.stderr, p["pid"])


def test_sleep_keeping_the_runs_stdout_open(home, tmp_path, sweep):
    # COMMAND's stdout and stderr are pipes to us: the leftover sleep keeps them open
    r, rep = run_report(home, tmp_path, "sh", "-c", SLEEP_BEHIND % "")
    assert r.returncode == 23, r.stderr
    p = the_leak(rep)
    assert p["comm"] == "sleep"
    line = holds_line(r.stderr, p["pid"])
    assert "the run's stdout" in line and "the run's stderr" in line, line
    assert {"kind": "output", "fd": 1, "what": "the run's stdout"} in p["holdings"]["held"]


def test_stdout_not_held_is_not_claimed(home, tmp_path, sweep):
    r, rep = run_report(home, tmp_path, "sh", "-c", SLEEP_BEHIND % ">/dev/null 2>&1 </dev/null")
    assert r.returncode == 23, r.stderr
    p = the_leak(rep)
    assert p["holdings"]["held"] == [] and p["holdings"]["summary"] == ""
    assert "holds " not in r.stderr.decode()


def test_deleted_and_locked_files_under_home(home, tmp_path, sweep):
    ready = str(tmp_path / "open")
    holder = ("import fcntl, os, sys, time\n"
              "home = os.environ['HOME']\n"
              "gone = open(os.path.join(home, 'scratch.tmp'), 'w'); os.unlink(gone.name)\n"
              "db = open(os.path.join(home, 'app.db'), 'w'); fcntl.lockf(db, fcntl.LOCK_EX)\n"
              "open(sys.argv[1], 'w').close()\n"
              "time.sleep(600)\n")
    r, rep = run_leaking(home, tmp_path, [PY, "-c", holder, ready], ready)
    assert r.returncode == 23, r.stderr
    p = the_leak(rep)
    held = {(h["kind"], h["what"]) for h in p["holdings"]["held"]}
    assert ("deleted", os.path.join(home, "scratch.tmp") + " (deleted)") in held, held
    assert ("file", os.path.join(home, "app.db") + " (locked)") in held, held
    line = holds_line(r.stderr, p["pid"])
    assert os.path.join(home, "scratch.tmp") + " (deleted)" in line


def test_junit_failure_text_names_the_holdings(home, tmp_path, sweep):
    junit = str(tmp_path / "j.xml")
    r = reaper("run", "--home", home, "--timeout", "0", "--grace", "5", "--junit", junit, "--",
               "sh", "-c", SLEEP_BEHIND % "")
    assert r.returncode == 23, r.stderr
    text = open(junit).read()
    assert "holds:    the run&apos;s stdout" in text and "used:     RSS " in text


def test_scan_gathers_for_what_is_alive(spawn, home, tmp_path):
    # ready once the interpreter runs: a process scanned in the middle of its exec can show
    # rss 0 (the kernel's per-cpu RSS counters of a new mm are not folded in yet)
    ready = str(tmp_path / "ready")
    p = spawn.orphan([PY, "-c", "import sys, time\nopen(sys.argv[1], 'w').close()\n"
                      "while True: time.sleep(60)\n", ready], cwd=home, ready=ready)
    report = str(tmp_path / "r.json")
    r = reaper("scan", "--home", home, "--report", report)
    assert r.returncode == 0, r.stderr
    got = by_pid(load_json(report))[p.pid]
    assert got["holdings"]["rss"] > 0
    assert all(h["kind"] != "unreadable" for h in got["holdings"]["held"]), got["holdings"]


def test_reap_names_open_files_under_each_home(spawn, tmp_path):
    """`reaper reap --home DIR` names files open under DIR even outside /tmp and the cwd."""
    home = tempfile.mkdtemp(prefix="reaper-hold-", dir="/var/tmp")
    try:
        spawn.home = home
        ready = os.path.join(home, "ready")
        holder = ("import os, sys, time\n"
                  "f = open(os.path.join(os.environ['HOME'], 'state.log'), 'w')\n"
                  "open(sys.argv[1], 'w').close()\n"
                  "time.sleep(600)\n")
        p = spawn.orphan([PY, "-c", holder, ready], ready=ready)
        report = str(tmp_path / "r.json")
        r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "5", "--report", report)
        assert r.returncode == 23, r.stderr
        got = by_pid(load_json(report))[p.pid]
        assert {"kind": "file", "fd": got["holdings"]["held"][0]["fd"],
                "what": os.path.join(home, "state.log")} in got["holdings"]["held"], got["holdings"]
    finally:
        shutil.rmtree(home)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a FUSE file system needs root")
def test_a_file_on_a_hung_fuse_server_does_not_block_the_reap(home, tmp_path, sweep):
    """The leftover holds a file whose FUSE server stopped answering: the holdings are read
    from what the kernel knows, never by asking the server (a stat would wait forever)."""
    if not os.path.exists("/dev/fuse") or not shutil.which("unshare"):
        pytest.skip("no /dev/fuse or no unshare(1) here")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    opened, report = str(tmp_path / "opened"), str(tmp_path / "r.json")
    status, _, err = on_hung_fuse(mnt, opened, [
        REAPER, "run", "--home", home, "--timeout", "0", "--grace", "5", "--report", report, "--",
        PY, "-c", STARTER, opened, "sh", "-c", "exec 3<%s/f; exec sleep 600" % mnt])
    assert status == 23, err.decode()
    held = [h["what"] for h in the_leak(load_json(report))["holdings"]["held"]]
    assert held == [str(mnt / "f")], held


def test_a_unix_socket_path_with_a_newline_is_named_whole(home, tmp_path, sweep):
    """/proc/net/unix prints a socket's path as it is: a newline in it must not cut it."""
    ready = str(tmp_path / "ready")
    path = os.path.join(home, "a\nb.sock")
    server = ("import socket, sys, time\n"
              "s = socket.socket(socket.AF_UNIX)\n"
              "s.bind(sys.argv[2])\n"
              "s.listen()\n"
              "open(sys.argv[1], 'w').close()\n"
              "time.sleep(600)\n")
    r, rep = run_leaking(home, tmp_path, [PY, "-c", server, ready, path], ready)
    held = [h["what"] for h in the_leak(rep)["holdings"]["held"]]
    assert held == ["unix %s (listening)" % path], held
