# SPDX-License-Identifier: MIT
"""`reaper run --cgroup`: the run in a cgroup of its own (found by cgroup whatever the leftover
did to its environment and session, a main thread that exited included, killed whole on owner
death, removed at the end), the fallback with --cgroup off, a read-only cgroup2 mount (auto
falls back saying why, on fails saying why), nesting, and the flag and variable values.

Every leftover reports its pid and start time; it is checked gone by both, and the run's cgroup
directory must be gone too (a cgroup holding a process cannot be removed)."""
import errno
import json
import os
import select
import shutil
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import KEEP_AND_DEAF, script
from procutil import (FIXTURES, PY, REAPER, alive, kill_identified, running, start_time, stat, string_at, syscall_stops,
                      wait_gone)


def own_cgroup():
    """(cgroup2 mount point, directory of our cgroup), or (None, None)."""
    cg = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                cg = line[3:].strip()
    best = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if not post.startswith("cgroup2 "):
                continue
            fields = pre.split()
            root, mnt = fields[3], fields[4]
            if cg is None or not (root == "/" or cg == root or cg.startswith(root + "/")):
                continue
            rest = cg if root == "/" else cg[len(root):]
            if best is None or len(root) > best[2]:
                best = (mnt, mnt + (rest if rest != "/" else ""), len(root))
    return (best[0], best[1]) if best else (None, None)


MOUNT, OWN = own_cgroup()
WRITABLE = bool(OWN) and os.access(OWN, os.W_OK) and os.access(os.path.join(OWN, "cgroup.procs"), os.W_OK)
# CI runs as root: there nothing here may skip
needs_cgroup = pytest.mark.skipif(os.geteuid() != 0 and not WRITABLE,
                                  reason="no writable cgroup2 for this user (cgroup tests need root or a delegated cgroup)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a private mount namespace needs root")

# env -i, setsid, double fork: the grandchild carries neither the marker nor reaper's session
ESCAPE = """
    import os, sys, time
    r, w = os.pipe()
    os.set_inheritable(w, True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open("/dev/null", os.O_RDWR)
            for i in (0, 1, 2):
                os.dup2(null, i)
            os.execve("%s", ["%s", "-c", "import os, sys, time\\n"
                      "st = open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]\\n"
                      "os.write(int(sys.argv[1]), ('%%d %%s\\\\n' %% (os.getpid(), st)).encode())\\n"
                      "time.sleep(300)", str(w)], {})
        os._exit(0)
    os.wait()
    os.close(w)
    line = os.read(r, 100).decode()
    print("left", line.strip(), flush=True)
""" % (PY, PY)


def gone(pid, st):
    return start_time(pid) != st


def cgroups_of_run(run_id):
    return [d for d in (os.listdir(OWN) if OWN else []) if d == "reaper-run-" + run_id]


def report(tmp_path):
    with open(str(tmp_path / "r.json")) as f:
        return json.load(f)


# a child that leaves the run's cgroup for the one above (reaper's) and drops the marker: at the
# end the run's cgroup is empty, and only descent finds it
LEAVE = """
    import os, sys
    r, w = os.pipe()
    os.set_inheritable(w, True)
    if os.fork() == 0:
        with open(%r + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        null = os.open("/dev/null", os.O_RDWR)
        for i in (0, 1, 2):
            os.dup2(null, i)
        os.execve("%s", ["%s", "-c", "import os, sys, time\\n"
                  "st = open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]\\n"
                  "os.write(int(sys.argv[1]), ('%%d %%s\\\\n' %% (os.getpid(), st)).encode())\\n"
                  "time.sleep(300)", str(w)], {})
    os.close(w)
    line = os.read(r, 100).decode()
    print("left", line.strip(), flush=True)
"""


@needs_cgroup
def test_a_leftover_that_left_the_cgroup_and_its_marker_is_found_by_descent(run, tmp_path):
    """The run's cgroup is empty at the end (the reap's one scan runs with the marker finders):
    what left it, without the marker, is still found as a descendant and ended."""
    r = run(["--cgroup", "on", "--timeout", "0.2", "--grace", "0", "--report", str(tmp_path / "r.json")],
            script(LEAVE % (OWN, PY, PY)))
    assert r.wait(60) == 23, r.stderr
    pid, st = map(int, r.out.split("left ")[1].split()[:2])
    assert gone(pid, st)
    doc = r.state()
    assert not cgroups_of_run(doc["run_id"]), "the run's cgroup is still there"
    leak = [p for p in report(tmp_path)["processes"] if p["pid"] == pid]
    assert leak and leak[0]["fate"] == "killed", leak
    assert "descendant" in " ".join(leak[0]["found_by"]) and "cgroup" not in leak[0]["found_by"], leak


@needs_cgroup
def test_cgroup_on_finds_env_i_setsid_double_fork_and_removes_its_cgroup(run, tmp_path):
    r = run(["--cgroup", "on", "--timeout", "0.2", "--grace", "0", "--report", str(tmp_path / "r.json")],
            script(ESCAPE))
    assert r.wait(60) == 23, r.stderr
    pid, st = map(int, r.out.split("left ")[1].split()[:2])
    assert gone(pid, st)
    doc = r.state()
    assert doc["tracking"] == "cgroup"
    assert not cgroups_of_run(doc["run_id"]), "the run's cgroup is still there"
    assert "; tracking: cgroup" in r.stderr
    assert "found by descendant of the run, cgroup" in r.stderr or "found by cgroup" in r.stderr, r.stderr
    rep = report(tmp_path)
    assert rep["tracking"] == "cgroup"
    assert "cgroup" in rep["finders"]
    leak = [p for p in rep["processes"] if p["pid"] == pid]
    assert leak and leak[0]["fate"] == "killed" and "cgroup" in leak[0]["found_by"], leak


@needs_cgroup
def test_report_only_leftover_leaves_the_cgroup_before_it_goes(run, tmp_path):
    """What the run leaves alive on purpose moves up into reaper's cgroup; the run's goes."""
    r = run(["--cgroup", "on", "--timeout", "0", "--report-only"], script(ESCAPE))
    assert r.wait(60) == 23, r.stderr
    pid, st = map(int, r.out.split("left ")[1].split()[:2])
    fd = os.pidfd_open(pid)
    try:
        assert start_time(pid) == st  # pinned: fd is the leftover itself
        assert not cgroups_of_run(r.state()["run_id"]), "the run's cgroup is still there"
        with open("/proc/%d/cgroup" % pid) as f:
            assert "0::" + open("/proc/self/cgroup").read().split("0::")[1].strip() in f.read()
        assert "cannot remove" not in r.stderr
    finally:
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        assert wait_gone([fd], 10) == []
        os.close(fd)


def test_cgroup_off_tracks_by_proc(run, tmp_path):
    r = run(["--cgroup", "off", "--timeout", "0.2", "--grace", "0", "--report", str(tmp_path / "r.json")],
            script(ESCAPE))
    assert r.wait(60) == 23, r.stderr
    pid, st = map(int, r.out.split("left ")[1].split()[:2])
    assert gone(pid, st)
    assert r.state()["tracking"] == "proc"
    assert "; tracking: proc" in r.stderr
    rep = report(tmp_path)
    assert rep["tracking"] == "proc" and "cgroup" not in rep["finders"]
    leak = [p for p in rep["processes"] if p["pid"] == int(pid)]
    assert leak and leak[0]["found_by"] == ["descendant of the run"], leak


@needs_cgroup
def test_zombie_leader_found_and_killed_in_cgroup_mode(run, tmp_path):
    """A leftover whose main thread called pthread_exit() while another thread runs on."""
    zl = os.path.join(FIXTURES, "zl")
    r = run(["--cgroup", "on", "--timeout", "0.2", "--grace", "0", "--report", str(tmp_path / "r.json")],
            ["sh", "-c", "setsid %s </dev/null >/dev/null 2>&1 & echo $!; "
                         "while [ \"$(cut -d' ' -f3 /proc/$!/stat)\" != Z ]; do :; done" % zl])
    assert r.wait(60) == 23, r.stderr
    pid = int(r.out.split()[0])
    rep = report(tmp_path)
    leak = [p for p in rep["processes"] if p["pid"] == pid]
    assert leak and leak[0]["fate"] == "killed" and "cgroup" in leak[0]["found_by"], rep["processes"]
    assert not os.path.exists("/proc/%d" % pid) or start_time(pid) != leak[0]["start_time"]
    assert not cgroups_of_run(r.state()["run_id"])


# COMMAND (argv: depth, the cgroup2 mount): a chain of DEPTH nested empty cgroups in the run's
# cgroup, a sibling the kernel lists after the chain, and a setsid leftover under env -i moved
# into the sibling ("left PID START" once it is there).
DEEP_CHAIN = """
    import os, sys
    depth, mount = int(sys.argv[1]), sys.argv[2]
    own = [l for l in open("/proc/self/cgroup") if l.startswith("0::")][0][3:].strip()
    cg, here = mount + own, os.getcwd()
    os.chdir(cg)
    for i in range(depth):  # relative steps: the chain's path is longer than PATH_MAX
        os.mkdir("chain" if i == 0 else "c")
        os.chdir("chain" if i == 0 else "c")
    os.chdir(here)
    for i in range(1000):
        name = "sibling%d" % i
        os.mkdir(os.path.join(cg, name))
        listed = os.listdir(cg)
        if listed.index(name) > listed.index("chain"):
            break
        os.rmdir(os.path.join(cg, name))
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        with open(os.path.join(cg, name, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(r)
        os.set_inheritable(w, True)
        os.execve(sys.executable, [sys.executable, "-c", "import os, sys, time\\n"
                  "st = open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]\\n"
                  "os.write(int(sys.argv[1]), ('%d %s' % (os.getpid(), st)).encode())\\n"
                  "time.sleep(300)", str(w)], {})
    os.close(w)
    print("left", os.read(r, 100).decode(), flush=True)
"""


def remove_tree(top):
    """rmdir the empty cgroup top and every one below it, bottom-up, however deep (relative
    steps: a deep chain's path is longer than PATH_MAX)."""
    here, names = os.getcwd(), []
    try:
        os.chdir(top)
        while True:
            below = sorted(e.name for e in os.scandir(".") if e.is_dir(follow_symlinks=False))
            if below:
                os.chdir(below[0])
                names.append(below[0])
            elif names:
                os.chdir("..")
                os.rmdir(names.pop())
            else:
                break
    finally:
        os.chdir(here)
    os.rmdir(top)


def remove_tree_when_empty(top):
    """After a failed test: remove_tree(top) once nothing lives in it (what was killed may
    still be exiting)."""
    deadline = time.monotonic() + 60
    while os.path.exists(top):
        try:
            with open(os.path.join(top, "cgroup.events")) as f:
                if "populated 0" in f.read():
                    remove_tree(top)
                    return
        except FileNotFoundError:
            return
        assert time.monotonic() < deadline, "%s stays populated" % top
        time.sleep(0.05)


@needs_cgroup
@pytest.mark.parametrize("depth", [300, 2000])
def test_deep_empty_cgroup_chain_neither_hides_a_sibling_nor_keeps_the_cgroup(run, tmp_path, depth):
    """The cgroup tree is walked to any depth: the leftover in a cgroup listed after the chain
    is found by the cgroup, and the chain goes bottom-up with the run's cgroup."""
    r = run(["--cgroup", "on", "--timeout", "0.2", "--grace", "0", "--report", str(tmp_path / "r.json")],
            script(DEEP_CHAIN) + [str(depth), MOUNT])
    code = r.wait(300)
    words = r.out.split()
    assert words[:1] == ["left"], (r.out, r.stderr)
    pid, st = int(words[1]), int(words[2])
    try:
        assert code == 23, r.stderr
        assert "cannot remove" not in r.stderr, r.stderr
        leak = [p for p in report(tmp_path)["processes"] if p["pid"] == pid]
        assert leak and "cgroup" in leak[0]["found_by"], leak
        assert leak[0]["fate"] == "killed", leak
        assert gone(pid, st)
        assert not cgroups_of_run(r.state()["run_id"]), "the run's cgroup is still there"
    finally:
        if not gone(pid, st):
            kill_identified(pid, st)
        remove_tree_when_empty(os.path.join(OWN, "reaper-run-" + r.state()["run_id"]))


@needs_cgroup
def test_owner_death_with_a_deep_empty_cgroup_chain_still_removes_the_cgroup(run, tmp_path):
    """The guardian walks the same tree: the leftover beside a chain of 300 dies and the whole
    tree goes, bottom-up."""
    r = run(["--cgroup", "on", "--timeout", "60"], script(DEEP_CHAIN) + ["300", MOUNT])
    words = r.line(120).split()
    assert words[:1] == ["left"], words
    pid, st = int(words[1]), int(words[2])
    cg = os.path.join(OWN, "reaper-run-" + r.state()["run_id"])
    fd = os.pidfd_open(pid)
    try:
        assert not gone(pid, st)
        r.signal(signal.SIGKILL)
        assert wait_gone([fd], 60) == [], "the leftover survived its owner"
        deadline = time.monotonic() + 60
        while os.path.exists(cg) and time.monotonic() < deadline:
            time.sleep(0.05)  # the guardian removes it after the kill: no event for us
        assert not os.path.exists(cg), "the guardian left the run's cgroup"
    finally:
        if alive(fd):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        os.close(fd)
        remove_tree_when_empty(cg)


@needs_cgroup
def test_owner_death_under_env_i_kills_the_cgroup(run, tmp_path):
    """As tmux's test Makefile does: every script under env -i, so no leftover has the marker."""
    body = """
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(300)
            os._exit(0)
        os.wait()
        print("ready", flush=True)
        time.sleep(300)
    """
    cmd = ["env", "-i", PY, "-c", textwrap.dedent(body)]
    r = run(["--cgroup", "on", "--timeout", "60"], cmd)
    r.expect("ready")
    doc = r.state()
    cg = os.path.join(OWN, "reaper-run-" + doc["run_id"])
    with open(os.path.join(cg, "cgroup.procs")) as f:
        pids = [int(x) for x in f.read().split()]
    assert len(pids) == 2, pids  # env -i python and its double-forked daemon (the middle one exited)
    fds = []
    for p in pids:
        try:
            fds.append(os.pidfd_open(p))
        except OSError:
            pass
    try:
        # still in the run's cgroup once pinned: these fds are the run's processes
        with open(os.path.join(cg, "cgroup.procs")) as f:
            assert sorted(int(x) for x in f.read().split()) == sorted(pids)
        r.signal(signal.SIGKILL)
        assert wait_gone(fds, 20) == [], "the run survived its owner"
        deadline = time.monotonic() + 20
        while os.path.exists(cg) and time.monotonic() < deadline:
            time.sleep(0.05)  # the guardian removes it after the kill: no event for us
        assert not os.path.exists(cg), "the guardian left the run's cgroup"
    finally:
        for fd in fds:
            os.close(fd)


@needs_cgroup
def test_nested_runs_make_their_cgroups_below_the_outer_one(run, tmp_path):
    inner = tmp_path / "inner-cgroup"
    r = run(["--cgroup", "on", "--timeout", "5"],
            [REAPER, "run", "--cgroup", "on", "--timeout", "0.1", "--grace", "0", "--",
             "sh", "-c", "cat /proc/self/cgroup > %s; sleep 300 &" % inner])
    assert r.wait(60) == 23, r.stderr  # the inner run's leak exit code passes through
    outer_id = r.state()["run_id"]
    cgpath = [l for l in inner.read_text().splitlines() if l.startswith("0::")][0]
    parts = cgpath[3:].split("/")
    assert parts[-2] == "reaper-run-" + outer_id and parts[-1].startswith("reaper-run-"), cgpath
    assert not cgroups_of_run(outer_id)


def private_ro_cgroup(argv):
    """argv run in a private mount namespace whose cgroup2 mount is read-only."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            'mount -o remount,bind,ro "$0" && exec "$@"', MOUNT] + list(argv)


@needs_root
def test_read_only_cgroup2_auto_falls_back_and_on_fails(run, tmp_path):
    assert MOUNT, "no cgroup2 mount"
    r = run(None, private_ro_cgroup([REAPER, "run", "--state", str(tmp_path / "s.json"), "--cgroup", "auto",
                                     "--timeout", "0.1", "--grace", "0", "--", "sh", "-c", "sleep 300 &"]),
            state=False)
    assert r.wait(60) == 23, r.stderr
    assert "reaper: note: the cgroup2 mount at %s is read-only; tracking the run by its marker and by " \
           "descent" % OWN in r.stderr, r.stderr
    assert "; tracking: proc" in r.stderr
    assert json.loads((tmp_path / "s.json").read_text())["tracking"] == "proc"
    r = run(None, private_ro_cgroup([REAPER, "run", "--cgroup", "on", "--", "sh", "-c", "echo ran"]), state=False)
    assert r.wait(60) == 126
    assert r.out == ""
    assert r.stderr.strip() == "reaper: --cgroup on: the run cannot have a cgroup: the cgroup2 mount at %s is " \
                               "read-only" % OWN, r.stderr


def test_cgroup_values(run):
    r = run(["--cgroup", "sometimes"], ["true"], state=False)
    assert r.wait(30) == 64
    assert "--cgroup: 'sometimes' is not one of off, auto, on" in r.stderr
    r = run([], ["true"], env={"REAPER_CGROUP": "sometimes"})
    assert r.wait(30) == 0
    assert "REAPER_CGROUP: 'sometimes' is not one of off, auto, on; using auto" in r.stderr
    r = run([], ["true"], env={"REAPER_CGROUP": "off"})
    assert r.wait(30) == 0
    assert r.state()["tracking"] == "proc"


@needs_cgroup
def test_a_run_out_of_descriptors_still_removes_its_cgroup(run):
    """However few descriptors the run has (the reap incomplete, leftovers still running),
    its cgroup goes: what is left moves up first."""
    import resource
    for n in range(8, 21):
        r = run(["--cgroup", "on", "--timeout", "0.2", "--grace", "0.2"], ["sh", "-c", "sleep 1000 >/dev/null 2>&1 & sleep 1001 >/dev/null 2>&1 & exit 0"],
                preexec_fn=lambda n=n: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)))
        code = r.wait(60)
        try:
            doc = r.state()
        except FileNotFoundError:
            continue  # too few to begin the document: nothing was started
        assert doc["phase"] == "exited", (n, doc)
        assert not cgroups_of_run(doc["run_id"]), "with %d descriptors (exit %d) the run's cgroup is still there: %s" % (n, code, r.stderr)
        assert "cannot remove" not in r.stderr, (n, r.stderr)


HELD_FUSE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "held_fuse.py")


class HeldFuseRun:
    """`reaper run --state ... ARGS -- COMMAND` under held_fuse.py, in a mount namespace of its
    own: COMMAND sees the file system at self.mnt, whose held answers come with self.release().
    Ending the process group (cleanup) ends the server: nothing waits on it after the test."""

    def __init__(self, tmp_path, args, command):
        if not os.path.exists("/dev/fuse") or not shutil.which("unshare"):
            pytest.skip("no /dev/fuse or no unshare(1) here")
        self.mnt = str(tmp_path / "mnt")
        os.mkdir(self.mnt)
        self.control = str(tmp_path / "control")
        os.mkfifo(self.control)
        self.state_path = str(tmp_path / "state.json")
        argv = ["unshare", "--mount", "--propagation", "private", PY, HELD_FUSE, self.mnt, self.control, "--",
                REAPER, "run", "--state", self.state_path] + args + ["--"] + command(self.mnt)
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  start_new_session=True)
        self.err = b""
        self.cg = None

    def stdout_line(self, timeout=60):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        assert r, "COMMAND printed nothing within %ss" % timeout
        return self.p.stdout.readline().decode().strip()

    def stderr_until(self, text, timeout=120):
        deadline = time.monotonic() + timeout
        fd = self.p.stderr.fileno()
        while text.encode() not in self.err:
            r, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            assert r, "no %r from reaper within %ss: %r" % (text, timeout, self.err)
            chunk = os.read(fd, 65536)
            assert chunk, "reaper's stderr ended before %r: %r" % (text, self.err)
            self.err += chunk

    def doc(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with open(self.state_path) as f:
                    d = json.load(f)
                self.cg = os.path.join(OWN, "reaper-run-" + d["run_id"])
                return d
            except FileNotFoundError:
                time.sleep(0.01)
        raise AssertionError("no state document")

    def pinned(self, pid, comm):
        """A pidfd of pid, checked to be comm after it was opened."""
        fd = os.pidfd_open(pid)
        with open("/proc/%d/comm" % pid) as f:
            assert f.read().strip() == comm, "pid %d is not %s" % (pid, comm)
        return fd

    def release(self):
        with open(self.control, "w") as f:
            f.write("go\n")

    def finish(self, timeout=120):
        out, err = self.p.communicate(timeout=timeout)
        self.err += err
        return self.p.returncode

    def cleanup(self):
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)  # the server with it: whatever waits on it returns
            self.p.communicate()
        if self.cg and os.path.isdir(self.cg):
            # what it held is dying with the server; then the directory can go
            reaper_run_cgroup_gone(self.cg)


def reaper_run_cgroup_gone(cg):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.rmdir(cg)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def holds_open(pid, path):
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for n in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, n)) == path:
                return True
        except OSError:
            pass
    return False


@needs_cgroup
@needs_root
def test_a_leftover_still_exiting_when_the_reap_ends_is_waited_for_and_its_cgroup_removed(tmp_path):
    """The leftover is killed, but its exit waits on its file system (the last close of a file
    on FUSE): when the reap gives up on it, it is still listed in the run's cgroup, and the
    kernel moves no exiting task. reaper waits on the cgroup's events until it is gone, then
    removes the cgroup; before, it tried to move it, failed and left the cgroup behind."""
    r = HeldFuseRun(tmp_path, ["--cgroup", "on", "--timeout", "0", "--grace", "0"],
                    lambda mnt: ["sh", "-c", "sleep 600 3<%s/f & echo ready" % mnt])
    try:
        assert r.stdout_line() == "ready"
        doc = r.doc()
        reaper = r.pinned(doc["reaper_pid"], "reaper")
        try:
            r.stderr_until("SUMMARY")  # the reap is over: the leftover is still exiting
            events = os.path.join(r.cg, "cgroup.events")
            deadline = time.monotonic() + 120
            while wait_gone([reaper], 0.01) and not holds_open(doc["reaper_pid"], events):
                assert time.monotonic() < deadline, "reaper neither ended nor waited on its cgroup"
            r.release()  # the leftover's close is answered: its exit ends
            r.finish()
            err = r.err.decode(errors="replace")
            assert "unkillable" in err, err
            assert "cannot remove" not in err, err
            assert not os.path.exists(r.cg), "the run's cgroup was left behind: " + err
        finally:
            os.close(reaper)
    finally:
        r.cleanup()


@needs_cgroup
@needs_root
def test_owner_death_with_a_leftover_that_cannot_die_yet_still_removes_the_cgroup(tmp_path):
    """reaper is SIGKILLed while a leftover sleeps uninterruptibly (a stat its FUSE server does
    not answer): the guardian kills the run, and what cannot die yet moves up into reaper's
    cgroup, so the run's cgroup goes; before, the guardian waited a fixed 3 s for the cgroup
    to empty and left it behind."""
    r = HeldFuseRun(tmp_path, ["--cgroup", "on", "--timeout", "60"],
                    lambda mnt: ["sh", "-c", "stat %s/g >/dev/null & echo ready; exec sleep 600" % mnt])
    try:
        assert r.stdout_line() == "ready"
        doc = r.doc()
        reaper = r.pinned(doc["reaper_pid"], "reaper")
        guardian = os.pidfd_open(doc["guardian_pid"])
        assert wait_gone([reaper], 0) == [reaper]  # reaper still runs: so does its guardian, that pid
        stuck = None
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(r.control + ".held"):  # the server has the stat's request
                assert time.monotonic() < deadline, "the stat never reached the server"
                time.sleep(0.01)
            with open(os.path.join(r.cg, "cgroup.procs")) as f:
                for pid in map(int, f.read().split()):
                    try:
                        stuck = (pid, r.pinned(pid, "stat"))
                        break
                    except (OSError, AssertionError):
                        pass
            assert stuck, "no stat in the run's cgroup"
            signal.pidfd_send_signal(reaper, signal.SIGKILL)
            assert wait_gone([guardian], 120) == [], "the guardian did not end"
            assert not os.path.exists(r.cg), "the guardian left the run's cgroup behind"
            with open("/proc/%d/cgroup" % stuck[0]) as f:  # moved up into reaper's cgroup
                assert "0::" + open("/proc/self/cgroup").read().split("0::")[1].strip() in f.read()
            r.release()
            assert wait_gone([stuck[1]], 60) == [], "the killed leftover did not end once answered"
            r.finish()
        finally:
            for fd in (reaper, guardian) + ((stuck[1],) if stuck else ()):
                os.close(fd)
    finally:
        r.cleanup()


@needs_cgroup
def test_command_starts_in_the_cgroup_under_an_address_space_limit(run):
    """Where the address space is limited (ulimit -v) and the stack is not, the room COMMAND
    would start on (as large as the stack may grow) cannot be had: COMMAND still starts, in
    the run's cgroup."""
    import resource

    def limits():
        resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        resource.setrlimit(resource.RLIMIT_AS, (48 << 20, 48 << 20))
    r = run(["--cgroup", "on"], ["/bin/sh", "-c", "cat /proc/self/cgroup"], preexec_fn=limits)
    code = r.wait(60)
    run_id = r.state()["run_id"]
    assert code == 0, r.stderr
    assert any(line.startswith("0::") and line.endswith("/reaper-run-" + run_id) for line in r.out.splitlines()), r.out
    assert not cgroups_of_run(run_id)


def held_at_cgroup_creation(r):
    """Follow the reaper r (started traced: PTRACE_TRACEME) until its mkdir of the run's
    cgroup has returned; it stays stopped there. The cgroup's path."""
    return held_at_cgroup_call(r, {83: 0, 258: 1}, 2)  # mkdir, mkdirat (the path's argument), exit


def held_at_cgroup_call(r, calls, stop_op):
    """Follow the reaper r (started traced: PTRACE_TRACEME) until a call of calls ({number:
    the path's argument}) on the run's cgroup is at stop_op (1 its entry, 2 its exit); it stays
    stopped there. The cgroup's path."""
    path, pid = None, r.p.pid
    for op, nr, args in syscall_stops(pid):
        if op == 1:  # entry
            name = string_at(pid, args[calls[nr]]) if nr in calls else ""
            path = name if "/reaper-run-" in name else None
        if path and op == stop_op:
            return path
    raise AssertionError("the reaper ended before the call on its cgroup")


@needs_cgroup
def test_a_sigterm_the_moment_the_cgroup_exists_still_removes_it(run):
    """Cancellation arriving right after the run made its cgroup (before anything else of the
    run is set up) is the run's cancellation: COMMAND is started and cancelled, the cgroup goes."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    r = run(["--cgroup", "on"], ["sleep", "1000"], preexec_fn=lambda: libc.ptrace(0, 0, None, None))
    path = None
    try:
        path = held_at_cgroup_creation(r)
        r.signal(signal.SIGTERM)
        assert libc.ptrace(17, r.p.pid, None, None) == 0  # PTRACE_DETACH
        code = r.wait(60)
        assert not os.path.isdir(path), "exit %d, the run's cgroup %s is left: %s" % (code, path, r.stderr)
        assert code == 128 + signal.SIGTERM, r.stderr
    finally:
        remove_if_empty(path)


def refuse_clone3(err):
    """In the child before its exec: a seccomp filter answers clone3 with -err (a container
    runtime's default profile says ENOSYS, older ones EPERM), every other call is made."""
    import ctypes
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    # ld [nr]; jeq clone3 ? next : skip one; ret ERRNO | err; ret ALLOW
    prog = struct.pack("HBBI", 0x20, 0, 0, 0) + struct.pack("HBBI", 0x15, 0, 1, 435) + \
        struct.pack("HBBI", 0x06, 0, 0, 0x00050000 | err) + struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000)
    buf = ctypes.create_string_buffer(prog, len(prog))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    assert libc.prctl(38, 1, None, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    assert libc.prctl(22, 2, ctypes.byref(fp), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER


@needs_cgroup
@pytest.mark.parametrize("err", [errno.ENOSYS, errno.EPERM], ids=["ENOSYS", "EPERM"])
def test_command_starts_in_the_cgroup_where_a_seccomp_filter_refuses_clone3(run, err):
    """No clone3 to be had (a container's seccomp profile): COMMAND and what it forks still
    start in the run's cgroup."""
    assert os.uname().machine == "x86_64", "clone3's number is x86-64's"
    r = run(["--cgroup", "on"], ["/bin/sh", "-c", "cat /proc/self/cgroup"], preexec_fn=lambda: refuse_clone3(err))
    code = r.wait(60)
    run_id = r.state()["run_id"]
    assert code == 0, r.stderr
    assert any(line.startswith("0::") and line.endswith("/reaper-run-" + run_id) for line in r.out.splitlines()), r.out
    assert not cgroups_of_run(run_id)


def guardians_by_tag(r, tag):
    """pidfds of the processes besides reaper whose command line holds tag: its guardian, a
    copy of reaper that shows reaper's command line."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and int(pid) != r.p.pid and tag.encode() in open("/proc/%s/cmdline" % pid, "rb").read():
                found.append(os.pidfd_open(int(pid)))
        except OSError:
            pass
    return found


def killed_leaves_no_cgroup(r, libc, guardians, path):
    """SIGKILL the traced reaper: it ends, each of guardians ends (closed here), and the run's
    cgroup path is gone."""
    r.signal(signal.SIGKILL)
    assert libc.ptrace(17, r.p.pid, None, None) in (0, -1)  # PTRACE_DETACH (the kill may win)
    assert r.wait(60) == -signal.SIGKILL
    for fd in guardians:
        assert select.select([fd], [], [], 120)[0], "the guardian did not end"
        os.close(fd)
    assert not os.path.isdir(path), "the run's cgroup %s is left" % path


def remove_if_empty(path):
    if path and os.path.isdir(path) and not open(os.path.join(path, "cgroup.procs")).read():
        os.rmdir(path)


@needs_cgroup
def test_a_reaper_killed_the_moment_its_cgroup_exists_leaves_no_cgroup(run):
    """SIGKILL right after the run made its cgroup: the owner-death guardian is already there
    and removes it."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    tag = "%d.%d" % (os.getpid(), time.monotonic_ns())
    r = run(["--cgroup", "on"], ["sleep", "1000", tag], preexec_fn=lambda: libc.ptrace(0, 0, None, None))
    path = None
    try:
        path = held_at_cgroup_creation(r)
        guardians = guardians_by_tag(r, tag)
        assert len(guardians) == 1, "no owner-death guardian when the run's cgroup is made"
        killed_leaves_no_cgroup(r, libc, guardians, path)
    finally:
        remove_if_empty(path)


@needs_cgroup
def test_a_reaper_killed_after_releasing_its_guardian_leaves_no_cgroup(run):
    """The guardian is released once the run's reap is over, before reaper removes the run's
    cgroup itself: a reaper SIGKILLed there (held at its own rmdir) still has the cgroup
    removed, by the released guardian, which then ends."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    tag = "%d.%d" % (os.getpid(), time.monotonic_ns())
    r = run(["--cgroup", "on"], ["true", tag], preexec_fn=lambda: libc.ptrace(0, 0, None, None))
    path = None
    try:
        path = held_at_cgroup_call(r, {84: 0}, 1)  # rmdir, at its entry
        guardians = guardians_by_tag(r, tag)
        # (one not found had exited already, its rmdir made)
        killed_leaves_no_cgroup(r, libc, guardians, path)
    finally:
        remove_if_empty(path)


MODES = [pytest.param("on", marks=needs_cgroup), "off"]


def kept_and_deaf(r):
    """(kept, deaf) as (pid, start time), from COMMAND's line; both are waited for until they
    have exec'd (their cmdlines are what --keep judges: before, both show COMMAND's)."""
    f = list(map(int, r.line(60).split()))
    kept, deaf = (f[0], f[1]), (f[2], f[3])
    deadline = time.monotonic() + 60
    for (pid, _), word in ((kept, b"keepme"), (deaf, b"deaf")):
        while not open("/proc/%d/cmdline" % pid, "rb").read().endswith(b"\0" + word + b"\0"):
            assert time.monotonic() < deadline, "pid %d never exec'd" % pid
            time.sleep(0.01)
    return kept, deaf


def end_identified(kept):
    """SIGKILL it through a pidfd if it is still that process, and wait until it is gone."""
    try:
        fd = os.pidfd_open(kept[0])
    except ProcessLookupError:
        return
    try:
        if start_time(kept[0]) == kept[1]:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
            wait_gone([fd], 30)
    finally:
        os.close(fd)


@pytest.mark.parametrize("mode", MODES)
def test_keep_is_kept_when_the_run_is_killed_whole(run, tmp_path, mode):
    """The escalation freezes the run's cgroup and writes cgroup.kill: the kept process leaves
    the cgroup first and stays running, as it does without a cgroup."""
    r = run(["--cgroup", mode, "--keep", "*keepme*", "--timeout", "0.1", "--grace", "0.2",
             "--report", str(tmp_path / "r.json")], script(KEEP_AND_DEAF) + ["0"])
    kept = None
    try:
        kept, deaf = kept_and_deaf(r)
        assert r.wait(60) == 23, r.stderr
        fates = {p["pid"]: p["fate"] for p in report(tmp_path)["processes"]}
        assert fates.get(kept[0]) == "kept" and fates.get(deaf[0]) == "killed", fates
        assert running(*kept), "the kept process was killed: " + r.stderr
        assert not running(*deaf)
        if mode == "on":
            assert not cgroups_of_run(r.state()["run_id"])
    finally:
        if kept:
            end_identified(kept)


@pytest.mark.parametrize("mode", MODES)
def test_owner_death_keeps_what_keep_keeps(run, tmp_path, mode):
    """reaper SIGKILLed: its guardian reaps under the run's --keep, the cgroup killed around
    the kept process."""
    r = run(["--cgroup", mode, "--keep", "*keepme*", "--timeout", "60"], script(KEEP_AND_DEAF) + ["300"])
    kept = None
    try:
        kept, deaf = kept_and_deaf(r)
        doc = r.state()
        guardian = os.pidfd_open(doc["guardian_pid"])
        try:
            r.signal(signal.SIGKILL)
            assert wait_gone([guardian], 60) == [], "the guardian did not end"
        finally:
            os.close(guardian)
        assert not running(*deaf), "the guardian left the run's leftover"
        assert running(*kept), "the guardian killed the kept process"
        if mode == "on":
            assert not cgroups_of_run(doc["run_id"])
    finally:
        if kept:
            end_identified(kept)


def outsider_argv():
    """An outsider: started before the run, as nobody when we are root."""
    body = "import os, time\nif os.geteuid() == 0:\n    os.setgid(65534); os.setuid(65534)\ntime.sleep(300)"
    return [PY, "-c", body]


# a root COMMAND writes the outsider's pid (argv[1]) into its own cgroup
MOVE_IN = """
    import sys
    cg = [l[3:].strip() for l in open("/proc/self/cgroup") if l.startswith("0::")][0]
    with open("%s" + cg + "/cgroup.procs", "w") as f:
        f.write(sys.argv[1])
"""


@needs_cgroup
@pytest.mark.parametrize("kill", [False, True], ids=["default", "kill-moved-in"])
def test_an_outsider_moved_into_the_runs_cgroup_is_moved_in(run, tmp_path, kill):
    """A process older than the run in its cgroup is reported moved in and left alone; with
    --kill-moved-in it is ended as a leak."""
    out = subprocess.Popen(outsider_argv(), stdin=subprocess.DEVNULL)
    fd = os.pidfd_open(out.pid)
    try:
        st = start_time(out.pid)
        deadline = time.monotonic() + 30
        while os.stat("/proc/%d" % out.pid).st_uid != (65534 if os.geteuid() == 0 else os.geteuid()):
            assert time.monotonic() < deadline, "the outsider never dropped to nobody"
            time.sleep(0.01)
        time.sleep(0.05)  # start times count in clock ticks: the run begins a tick later
        r = run(["--cgroup", "on", "--timeout", "0.1", "--grace", "0.2", "--report", str(tmp_path / "r.json")]
                + (["--kill-moved-in"] if kill else []), script(MOVE_IN % MOUNT) + [str(out.pid)])
        code = r.wait(60)
        procs = {p["pid"]: p for p in report(tmp_path)["processes"]}
        assert out.pid in procs, (procs, r.stderr)
        if kill:
            assert code == 23, r.stderr
            assert procs[out.pid]["fate"] == "terminated" and procs[out.pid]["leak"], procs[out.pid]
            assert wait_gone([fd], 30) == []
        else:
            assert code == 0, r.stderr
            assert procs[out.pid]["fate"] == "moved-in" and not procs[out.pid]["leak"], procs[out.pid]
            assert "MOVED IN" in r.stderr and "1 moved in" in r.stderr, r.stderr
            assert report(tmp_path)["summary"]["moved_in"] == 1
            assert running(out.pid, st)
        assert not cgroups_of_run(r.state()["run_id"])
    finally:
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out.wait(30)
        os.close(fd)


@pytest.mark.parametrize("mode", MODES)
def test_owner_death_of_a_report_only_run_signals_nothing(run, tmp_path, mode):
    """--report-only holds for the guardian too: reaper SIGKILLed, what the run left runs on
    (moved up into reaper's cgroup, the run's removed)."""
    r = run(["--cgroup", mode, "--report-only", "--timeout", "60"], script(KEEP_AND_DEAF) + ["300"])
    procs = []
    try:
        procs = list(kept_and_deaf(r))
        doc = r.state()
        guardian = os.pidfd_open(doc["guardian_pid"])
        try:
            r.signal(signal.SIGKILL)
            assert wait_gone([guardian], 60) == [], "the guardian did not end"
        finally:
            os.close(guardian)
        assert all(running(*p) for p in procs), "the guardian of a report-only run signalled its processes"
        if mode == "on":
            assert not cgroups_of_run(doc["run_id"])
    finally:
        for p in procs:
            end_identified(p)
