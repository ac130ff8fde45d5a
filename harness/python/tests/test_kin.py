# SPDX-License-Identifier: MIT
"""reaper.kin: a pid's stat and children, the trees below several roots, one identity signalled
or collected, and the adopted orphans' zombies collected (never a child this process started),
on real processes forked here; each checked against /proc read independently (procutil)."""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time

import pytest

import reaper
from reaper import kin
from procutil import stat as proc_stat

BOUND = 30.0


def until(cond, what: str):
    deadline = time.monotonic() + BOUND
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {BOUND} s: {what}")
        time.sleep(0.005)


class Chain:
    """Processes forked here that hold until closed: depth of them, each the child of the one
    before; setsid: the first leads a session of its own. Each waits for its child before it
    exits, so the chain is gone once the first is collected."""

    holding: set = set()  # the hold ends of the chains still open: a later chain must not keep them

    def __init__(self, depth: int, setsid: bool = False):
        self.hold_r, self.hold_w = os.pipe()
        rep_r, rep_w = os.pipe()
        first = os.fork()
        if first == 0:
            try:
                os.close(rep_r)
                for fd in Chain.holding | {self.hold_w}:
                    os.close(fd)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                if setsid:
                    os.setsid()
                for level in range(depth):
                    os.write(rep_w, f"{os.getpid()}\n".encode())
                    if level + 1 < depth and os.fork() != 0:
                        break
                os.close(rep_w)
                os.read(self.hold_r, 1)
                while True:
                    try:
                        os.wait()
                    except ChildProcessError:
                        break
            finally:
                os._exit(0)
        os.close(rep_w)
        text = b""
        while text.count(b"\n") < depth:
            chunk = os.read(rep_r, 4096)
            assert chunk, "a process of the chain died before it said its pid"
            text += chunk
        os.close(rep_r)
        self.pids = [int(x) for x in text.split()]
        self.starts = [proc_stat(p)["start"] for p in self.pids]
        self.idents = list(zip(self.pids, self.starts))
        self.first = first
        Chain.holding.add(self.hold_w)

    def release(self):
        """Close the hold: every process of the chain ends."""
        if self.hold_w >= 0:
            Chain.holding.discard(self.hold_w)
            os.close(self.hold_w)
            os.close(self.hold_r)
            self.hold_w = -1

    def close(self):
        self.release()
        try:
            os.waitpid(self.first, 0)
        except ChildProcessError:
            pass
        for pid, start in self.idents:
            until(lambda: (proc_stat(pid) or {}).get("start") != start, f"{pid} gone")


@pytest.fixture
def chains():
    made = []

    def make(depth, setsid=False):
        made.append(Chain(depth, setsid))
        return made[-1]
    yield make
    for c in made:  # each ends once its hold closes, and waits for its child first: no orphan
        c.close()


def test_pstat_of_self_a_child_and_one_gone(chains):
    c = chains(1)
    me = kin.pstat()
    assert me.pid == os.getpid() and me.ppid == os.getppid() and me.session == os.getsid(0)
    st = kin.pstat(c.pids[0])
    assert st.ident == c.idents[0] and st.ppid == os.getpid() and st.state in "RS"
    assert st.start_time == proc_stat(c.pids[0])["start"]
    c.close()
    assert kin.pstat(c.pids[0]) is None


def test_children_zombies_included_grandchildren_not(chains):
    a = chains(2)
    z = os.fork()
    if z == 0:
        os._exit(3)
    until(lambda: (proc_stat(z) or {}).get("state") == "Z", "the zombie")
    kids = {p.pid: p for p in kin.children()}
    assert a.pids[0] in kids and z in kids and a.pids[1] not in kids
    assert kids[z].state == "Z" and kids[z].ppid == os.getpid()
    assert [p.pid for p in kin.children(a.pids[0])] == [a.pids[1]]
    assert os.waitpid(z, 0)[0] == z
    assert z not in {p.pid for p in kin.children()}
    a.close()
    assert kin.children(a.pids[0]) == []


def test_trees_of_several_roots_each_process_once(chains):
    a = chains(3)
    d = chains(1, setsid=True)
    bogus = (a.pids[0], a.starts[0] + 1)
    got = kin.trees([a.idents[1], a.idents[0], d.idents[0], bogus])
    assert sorted(p.ident for p in got) == sorted(a.idents + d.idents)
    order = [p.pid for p in got]
    assert order.index(a.pids[1]) < order.index(a.pids[2])  # a parent before its children
    assert kin.trees([bogus]) == [] and kin.trees([]) == []
    # many roots, more than the first buffer holds
    assert len(kin.trees([a.idents[0]] * 200)) == 3


def test_last_pid_and_environ():
    before = kin.last_pid()
    p = subprocess.Popen(["/bin/sleep", "300"], env={"KIN_A": "1", "KIN_B": "two words"})
    try:
        after = kin.last_pid()
        assert before > 0 and after != before
        # (the plugin, when it checks this suite, adds its marker to what the test passes)
        want = {b"KIN_A=1", b"KIN_B=two words"}
        until(lambda: want <= set((kin.environ(p.pid) or b"").split(b"\0")), "the exec's environment")
        assert kin.environ(p.pid).endswith(b"\0")
        assert kin.environ() == open("/proc/self/environ", "rb").read()
        assert len(kin.environ()) > 0
    finally:
        p.kill()
        p.wait()
    assert kin.environ(p.pid) is None


def test_last_pid_reads_ns_last_pid_when_its_descriptor_was_closed_or_taken(tmp_path):
    """Code that closes every descriptor closes the one last_pid keeps; the number may then be
    another file's that holds an integer too (a pidfile): last_pid reads ns_last_pid still."""
    def truth():
        with open("/proc/sys/kernel/ns_last_pid") as f:
            return int(f.read())

    def read_right():  # (other processes of the host fork meanwhile; the pids may wrap)
        before, got, after = truth(), kin.last_pid(), truth()
        return before <= got <= after or after < before
    assert kin.last_pid() > 0
    kept = kin._last_pid_fd
    pidfile = tmp_path / "pid"
    pidfile.write_text("7\n")
    os.close(kept)
    fd = os.open(pidfile, os.O_RDONLY)
    try:
        if fd != kept:
            os.dup2(fd, kept)
        subprocess.run(["/bin/true"], check=True)
        assert read_right() and kin.last_pid() != 7
        assert os.pread(kept, 8, 0) == b"7\n"  # the file of whoever took the number, left open
    finally:
        os.close(kept)
        if fd != kept:
            os.close(fd)
    subprocess.run(["/bin/true"], check=True)
    assert read_right()  # the new descriptor's number closed too: opened again


def test_signal_only_the_identity_it_names(chains):
    c = chains(1)
    (pid, start), = c.idents
    assert kin.signal((pid, start + 1), signal.SIGKILL) is False
    assert kin.pstat(pid).state in "RS"
    assert kin.signal((pid, start), 0) is True
    assert kin.signal((pid, start), signal.SIGKILL) is True
    _, status = os.waitpid(c.first, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert kin.signal((pid, start), 0) is False


def test_collect_one_identity(chains):
    c = chains(2)
    me, grand = c.idents
    assert kin.collect(me) is None  # still running
    assert kin.collect(grand) is None  # not our child
    c.release()  # both end: the grandchild collected by its parent, which exits 0
    until(lambda: kin.pstat(me[0]).state == "Z", "the zombie")
    assert kin.collect((me[0], me[1] + 1)) is None
    assert kin.pstat(me[0]).state == "Z"  # another start time: left for its owner
    status = kin.collect(me)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert kin.collect(me) is None
    with pytest.raises(ChildProcessError):
        os.waitpid(me[0], os.WNOHANG)


def test_kill_identified_goes_through_the_library(chains):
    c = chains(1)
    (pid, start), = c.idents
    assert reaper.kill_identified({(pid, start + 1): "other"}) == []
    assert kin.pstat(pid).state in "RS"
    assert reaper.kill_identified({(pid, start): "held"}) == [f"{pid}: held"]
    _, status = os.waitpid(c.first, 0)
    assert os.WTERMSIG(status) == signal.SIGKILL
    assert reaper.kill_identified({(pid, start): "held"}) == []


def _zombie(pid):
    until(lambda: (kin.pstat(pid) or kin.PStat(0, 0, 0, 0, 0, "?")).state == "Z", f"{pid} a zombie")


def orphans_scenario():
    """Run in a process of its own (see the test below): it adopts, and no other collector (the
    plugin's, in proc mode) may take the zombies it looks for."""
    made = []

    def chains(depth, setsid=False):
        made.append(Chain(depth, setsid))
        return made[-1]
    reaper.adopt_orphans()
    try:
        with kin.Orphans() as o:
            # a child of ours in our session (C code's): its zombie stays through every look
            mine = os.fork()
            if mine == 0:
                os._exit(5)
            _zombie(mine)
            assert sum(o.collect() for _ in range(5)) == 0
            assert os.waitstatus_to_exitcode(os.waitpid(mine, 0)[1]) == 5
            # a child that leads a session of its own (start_new_session): left as well
            lead = chains(1, setsid=True)
            assert kin.signal(lead.idents[0], signal.SIGKILL)
            _zombie(lead.pids[0])
            assert sum(o.collect() for _ in range(5)) == 0
            lead.close()
            # seen running below a child of ours, then adopted: collected once it dies
            below = chains(2)
            assert o.collect() == 0
            assert kin.signal(below.idents[0], signal.SIGKILL)
            os.waitpid(below.first, 0)
            until(lambda: kin.pstat(below.pids[1]).ppid == os.getpid(), "adopted")
            assert kin.signal(below.idents[1], signal.SIGKILL)
            _zombie(below.pids[1])
            collected = []
            until(lambda: collected.append(o.collect()) or kin.pstat(below.pids[1]) is None, "collected")
            assert sum(collected) == 1
            # a daemon's orphan (another session, not its leader), and one listed as our own
            d1, d2 = chains(2, setsid=True), chains(2, setsid=True)
            for d in (d1, d2):
                assert kin.signal(d.idents[0], signal.SIGKILL)
                os.waitpid(d.first, 0)
                until(lambda: kin.pstat(d.pids[1]).ppid == os.getpid(), "adopted")
                assert kin.signal(d.idents[1], signal.SIGKILL)
                _zombie(d.pids[1])
            collected = []
            until(lambda: collected.append(o.collect([d2.idents[1]])) or kin.pstat(d1.pids[1]) is None,
                  "the daemon's orphan collected")
            assert sum(collected) == 1
            assert kin.pstat(d2.pids[1]).state == "Z"
            assert o.collect([d2.idents[1]]) == 0
            assert os.WTERMSIG(os.waitpid(d2.pids[1], 0)[1]) == signal.SIGKILL
        try:
            o.collect()
            raise AssertionError("a closed handle collected")
        except ValueError:
            pass
    finally:
        _end(made)
    assert not [p for p in kin.children() if p.state == "Z"]


def _in_a_process_of_its_own(scenario: str) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", f"import test_kin; test_kin.{scenario}()"],
                       cwd=os.path.dirname(__file__), env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def _end(made) -> None:
    for c in made:
        for ident in c.idents:
            kin.signal(ident, signal.SIGKILL)
        c.close()
    reaper.release_orphans()


def test_orphans_collected_and_this_process_children_left():
    _in_a_process_of_its_own("orphans_scenario")


def orphans_thread_scenario():
    """Run in a process of its own: libreaper's thread collects a daemon's orphan with no call
    of ours, and leaves a zombie child of ours in our session for us."""
    made = []
    reaper.adopt_orphans()
    kin.orphans_start(0.01)
    try:
        try:
            kin.orphans_start(0.01)
            raise AssertionError("a second thread started")
        except reaper.ReaperError as e:
            assert e.errno == errno.EBUSY
        mine = os.fork()
        if mine == 0:
            os._exit(5)
        _zombie(mine)
        made.append(Chain(2, True))
        d = made[-1]
        assert kin.signal(d.idents[0], signal.SIGKILL)
        os.waitpid(d.first, 0)
        assert kin.signal(d.idents[1], signal.SIGKILL)
        until(lambda: kin.pstat(d.pids[1]) is None or kin.pstat(d.pids[1]).start_time != d.starts[1],
              "the daemon's orphan collected")
        assert kin.pstat(mine).state == "Z"
        assert os.waitstatus_to_exitcode(os.waitpid(mine, 0)[1]) == 5
        assert kin.orphans_stop() == 1
    finally:
        _end(made)
    try:
        kin.orphans_stop()
        raise AssertionError("a stopped thread stopped")
    except reaper.ReaperError as e:
        assert e.errno == errno.ESRCH
    assert not [p for p in kin.children() if p.state == "Z"]


def test_orphans_collected_by_a_thread_of_the_library():
    _in_a_process_of_its_own("orphans_thread_scenario")


def _cgroup_usable():
    import reaper.cgroup
    try:
        return not reaper.cgroup.usable(reaper.cgroup.current())
    except OSError:
        return False


@pytest.mark.skipif(os.geteuid() != 0 and not _cgroup_usable(),
                    reason="moving processes between cgroups needs a writable cgroup2 (root or a delegated cgroup)")
def test_cgroup_move_by_identity_with_what_it_forked_there(chains):
    """A process moved into a cgroup with what it started in the cgroup it was forked in."""
    import reaper.cgroup as cgroup
    c = chains(3)
    here = cgroup.current()  # where they were forked (the test's cgroup, under the plugin)
    assert all(cgroup.of(p) == here for p in c.pids)
    assert cgroup.of(0) == here
    top = cgroup.create(here, f"kin-{os.getpid()}")
    try:
        a, b = cgroup.create(top, "a"), cgroup.create(top, "b")
        assert cgroup.move(a, (c.pids[0], c.starts[0] + 1)) is False
        assert cgroup.move(a, c.idents[0]) and cgroup.of(c.pids[0]) == a
        # the two below it are still where it forked them: they go with it
        assert cgroup.move_tree(b, c.idents[0], [here]) == 3
        assert [cgroup.of(p) for p in c.pids] == [b, b, b]
        assert cgroup.move_tree(a, (c.pids[0], c.starts[0] + 1), [b]) == 0
        assert cgroup.move_tree(a, c.idents[0], [here]) == 1  # none of the others is in `here`
        assert [cgroup.of(p) for p in c.pids] == [a, b, b]
        c.close()
        assert cgroup.of(c.pids[0]) is None
    finally:
        cgroup.remove(top)
