# SPDX-License-Identifier: MIT
"""`reaper scan`: lists live matches as pgrep does (0 some, 1 none, 64 usage), --json."""
import json
import os

import pytest

from cli_util import SLEEPER, by_pid, reaper
from procutil import PY, start_time


def test_scan_nothing_matches_exits_1(home):
    r = reaper("scan", "--home", home)
    assert r.returncode == 1, r.stderr
    assert r.stdout == b""


def test_scan_lists_live_matches_and_signals_nothing(spawn, home):
    a = spawn.sleeper("first")
    b = spawn.sleeper("second")
    other = spawn.sleeper("elsewhere", env={"HOME": home + "-other"})
    r = reaper("scan", "--home", home)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    pids = {int(line.split()[0]) for line in lines}
    assert pids == {a.pid, b.pid}
    assert any(line.startswith("%d " % a.pid) and "first" in line for line in lines)
    assert a.alive and b.alive and other.alive


def test_scan_json_on_live_processes(spawn, home):
    a = spawn.sleeper("x", env={"REAPER_TEST": "tests/test_a.py::test_one"})
    b = spawn.sleeper("y", cwd="/tmp")
    r = reaper("scan", "--home", home, "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout.decode("utf-8"))
    assert rep["schema"] == "reaper-report/1.2"
    assert rep["command"] == "scan"
    assert rep["finders"] == ["env HOME=" + home]
    procs = by_pid(rep)
    assert set(procs) == {a.pid, b.pid}
    pa, pb = procs[a.pid], procs[b.pid]
    assert pa["fate"] == "alive" and pa["leak"] is True
    assert pa["test"] == "tests/test_a.py::test_one" and pb["test"] is None
    assert pa["exe"] == os.path.realpath(PY)
    assert pb["cwd"] == "/tmp"
    assert pa["cmdline"] == "%s -c %s x" % (PY, SLEEPER)
    assert pa["found_by"] == ["env HOME=" + home]
    assert pa["state"] in "SR"
    assert pa["age"] >= 0 and pa["start_time"] > 0
    assert start_time(a.pid) == pa["start_time"]
    assert rep["summary"]["processes"] == 2 and rep["summary"]["leaks"] == 2
    assert a.alive and b.alive


def test_scan_listing_shows_what_the_json_report_tells(spawn, home):
    """The listing reads no more of a match than its cmdline: each line still says what the
    JSON report (which describes it in full) says, for a program and for a child that was
    forked and never exec'd (its parent's cmdline)."""
    a = spawn.sleeper("listed", cwd="/tmp")
    ready = os.path.join(home, "forked")
    parent = spawn.orphan([PY, "-c", "import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(600)\n    os._exit(0)\n"
                           "open(%r + '.tmp', 'w').write(str(pid)); os.rename(%r + '.tmp', %r)\ntime.sleep(600)\n"
                           % (ready, ready, ready)], ready=ready)
    child = spawn.adopt(int(open(ready).read()))
    listed = reaper("scan", "--home", home)
    told = reaper("scan", "--home", home, "--json")
    assert listed.returncode == 0 and told.returncode == 0, (listed.stderr, told.stderr)
    procs = by_pid(json.loads(told.stdout.decode("utf-8")))
    assert set(procs) == {a.pid, parent.pid, child.pid}
    assert procs[child.pid]["cmdline"] == procs[parent.pid]["cmdline"]
    # the text form shows the newlines of these cmdlines as backslash-n
    assert sorted(listed.stdout.decode().splitlines()) == sorted(
        "%d %s" % (pid, p["cmdline"].replace("\n", "\\n")) for pid, p in procs.items())
    assert a.alive and parent.alive and child.alive


def test_scan_reports_forked_copies_as_their_parent(spawn, home):
    """Copies forked and never exec'd (a suite's workers) are reported as their parent: its
    cmdline, comm, exe, cwd and uid (the later ones read under their pin, before their stat)."""
    ready = os.path.join(home, "forked")
    parent = spawn.orphan([PY, "-c", "import os, time\nos.chdir('/tmp')\npids = []\nfor _ in range(3):\n"
                           "    pid = os.fork()\n    if pid == 0:\n        time.sleep(600)\n        os._exit(0)\n"
                           "    pids.append(str(pid))\nopen(%r + '.tmp', 'w').write(' '.join(pids)); "
                           "os.rename(%r + '.tmp', %r)\ntime.sleep(600)\n" % (ready, ready, ready)], ready=ready)
    kids = [spawn.adopt(int(p)) for p in open(ready).read().split()]
    told = reaper("scan", "--home", home, "--json")
    assert told.returncode == 0, told.stderr
    procs = by_pid(json.loads(told.stdout.decode("utf-8")))
    assert set(procs) == {parent.pid} | {k.pid for k in kids}
    assert procs[parent.pid]["cwd"] == "/tmp"
    for k in kids:
        assert procs[k.pid]["ppid"] == parent.pid
        for key in ("cmdline", "comm", "exe", "cwd", "uid"):
            assert procs[k.pid][key] == procs[parent.pid][key], (key, procs[k.pid], procs[parent.pid])
    assert parent.alive and all(k.alive for k in kids)


def test_scan_by_env_and_tree(spawn, home):
    a = spawn.sleeper(env={"MY_MARK": "42"})
    b = spawn.sleeper()
    r = reaper("scan", "--env", "MY_MARK=42")
    assert r.returncode == 0, r.stderr
    assert [int(x.split()[0]) for x in r.stdout.decode().splitlines()] == [a.pid]
    # a parent with a child: --tree PARENT finds the child
    child_file = os.path.join(home, "child")
    parent = spawn.orphan([PY, "-c", "import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(600)\n    os._exit(0)\n"
                           "open(%r + '.tmp', 'w').write(str(pid)); os.rename(%r + '.tmp', %r)\ntime.sleep(600)\n"
                           % (child_file, child_file, child_file)], ready=child_file)
    child = spawn.adopt(int(open(child_file).read()))
    r = reaper("scan", "--tree", str(parent.pid))
    assert r.returncode == 0, r.stderr
    assert [int(x.split()[0]) for x in r.stdout.decode().splitlines()] == [child.pid]
    assert b.alive


def test_scan_usage_errors_exit_64(home):
    for args in (["scan"], ["scan", "--tree", "abc"], ["scan", "--tree", "0"], ["scan", "--env", "NOEQUALS"],
                 ["scan", "--home", "relative/dir"], ["scan", "--home", home, "--bogus"],
                 ["scan", "--home", home, "--timeout", "1"], ["scan", "--home", home, "extra"],
                 ["reap", "--home", home, "--json"], ["reap"]):
        r = reaper(*args)
        assert r.returncode == 64, (args, r.returncode, r.stderr)
        assert b"usage: reaper " in r.stderr, args


def test_scan_and_reap_help_exit_0():
    for sub in ("scan", "reap"):
        r = reaper(sub, "--help")
        assert r.returncode == 0
        assert r.stdout.startswith(b"usage: reaper " + sub.encode())


def test_scan_and_reap_short_of_descriptors_say_incomplete(home):
    """With descriptors for /proc itself but none for reading a process, the answer is not
    "nothing matched" (1) or "nothing leaked" (0): exit 75 and a message that says why."""
    import resource
    import subprocess
    from procutil import REAPER
    for cmd in (["scan"], ["reap", "--timeout", "0"]):
        r = subprocess.run([REAPER, *cmd, "--home", home], capture_output=True, timeout=120,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (6, 6)))
        assert r.returncode == 75, (cmd, r.returncode, r.stderr)
        assert b"incomplete" in r.stderr and b"Too many open files" in r.stderr, r.stderr


def test_run_short_of_descriptors_never_says_leaked(home):
    """A run that leaves nothing, short of descriptors at each limit from "cannot start" to
    "fine": never the leak status, never an unexplained failure, never the run's cgroup left
    behind (an empty one is removed without a descriptor)."""
    import resource
    import subprocess
    from procutil import REAPER
    for mode in ("on", "off"):
        for limit in range(6, 14):
            r = subprocess.run([REAPER, "run", "--cgroup", mode, "--timeout", "0", "--", "true"],
                               capture_output=True, timeout=120,
                               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
            if mode == "on" and b"cannot have a cgroup" in r.stderr:
                assert os.geteuid() != 0, r.stderr  # root (CI) has a cgroup to make
                continue
            said = (mode, limit, r.returncode, r.stderr)
            assert r.returncode in (0, 75, 126), said
            assert r.returncode == 0 or r.stderr, said
            assert b"cannot remove the run's cgroup" not in r.stderr, said


def kthreadd():
    """The pid of kthreadd as this PID namespace sees it, or None (a container shows none)."""
    for pid in (2,):
        try:
            fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        if int(fields[1]) == 0 and int(fields[6]) & 0x00200000:  # ppid 0, PF_KTHREAD
            return pid
    return None


def test_kernel_threads_are_never_candidates():
    """A kernel thread is the kernel's: no test starts one and no signal of a reap's may reach
    one, so a tree finder rooted at kthreadd matches nothing."""
    import pytest
    k = kthreadd()
    if k is None:
        pytest.skip("no kernel thread is visible here (a PID namespace of its own)")
    r = reaper("scan", "--tree", str(k), "--json")
    report = json.loads(r.stdout)
    assert r.returncode == 1 and report["processes"] == [], (r.returncode, r.stdout[:500])


@pytest.mark.parametrize("mode", [
    pytest.param("on", marks=pytest.mark.skipif(os.geteuid() != 0, reason="--cgroup on needs root or a delegated cgroup")),
    "off"])
def test_run_with_few_descriptors_to_spare_still_ends_its_leftovers(mode, tmp_path):
    """Ten descriptors to spare (the caller left 15 open, the limit 28): the reap has what it
    needs to read each leftover and end it, in each tracking mode; no read holds a descriptor
    past its use."""
    import resource
    import secrets
    import signal
    import subprocess
    from procutil import REAPER, pidfds_where, environ, wait_gone
    mark = b"REAPER_FEWFDS=" + secrets.token_hex(8).encode()
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(15)]
    err = open(tmp_path / ("stderr-" + mode), "w+b")  # a file: a leftover on a pipe would hold it open
    try:
        r = subprocess.run([REAPER, "run", "--cgroup", mode, "--timeout", "0.5", "--grace", "0.5", "--",
                            "sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do setsid sleep 300 & done"],
                           stdout=subprocess.DEVNULL, stderr=err, timeout=120, pass_fds=held,
                           env={**os.environ, mark.split(b"=")[0].decode(): mark.split(b"=")[1].decode()},
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (28, 28)))
    finally:
        for fd in held:
            os.close(fd)
    err.seek(0)
    r.stderr = err.read()
    err.close()
    left = pidfds_where(lambda pid: mark in environ(pid))
    for pid, fd in left:
        signal.pidfd_send_signal(fd, signal.SIGKILL)
    wait_gone([fd for _, fd in left])
    for _, fd in left:
        os.close(fd)
    assert not left, (mode, r.returncode, r.stderr.decode()[-400:])
    # (75 when a listing of the cgroup or of a child's children wanted one more descriptor:
    # the result said incomplete, what it found ended all the same)
    assert r.returncode in (23, 75), (mode, r.returncode, r.stderr.decode()[-400:])
