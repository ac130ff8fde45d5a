# SPDX-License-Identifier: MIT
"""The --state document: counts while the run lives, phases, mode, atomicity, no output in it,
and a path that cannot be written."""
import json
import os
import stat
import subprocess
import time

from conftest import has_marker, marked, script, signalled_script
from procutil import alive

PROVIDERS = """
    import os, sys
    providers, per = 3, 5
    rd, wr = os.pipe()
    for i in range(providers):
        if os.fork() == 0:
            # a provider: its own session, daemons that outlive it, then gone at once
            os.setsid()
            for j in range(per):
                if os.fork() == 0:
                    os.close(wr)
                    os.read(rd, 1)
                    os._exit(0)
            os._exit(0)
    for i in range(providers):
        os.wait()
    os.close(rd)
    print("ready", flush=True)
    sys.stdin.readline()
    os.close(wr)
    print("released", flush=True)
    sys.stdin.readline()
"""


def test_orphans_of_concurrent_setsid_providers_are_reaped_while_the_runner_lives(run):
    r = run([], script(PROVIDERS), stdin=subprocess.PIPE)
    r.expect("ready")
    # adoption raises no event: the document shows the 15 adopted daemons at its next refresh
    doc = r.wait_state(lambda d: d["adopted_children"] == 15, what="15 adopted")
    assert doc["phase"] == "running"
    assert doc["reaped_orphans_total"] == 0
    assert doc["orphaned_children_total"] == 15
    assert doc["active_children"] == 16  # COMMAND and the daemons
    r.p.stdin.write(b"go\n")
    r.p.stdin.flush()
    r.expect("released")
    doc = r.wait_state(lambda d: d["reaped_orphans_total"] == 15, what="15 reaped")
    assert doc["phase"] == "running"  # reaped while COMMAND still runs
    assert doc["adopted_children"] == 0
    assert doc["orphaned_children_total"] == 15
    # nothing of the run but COMMAND is left, and no zombie waits for the end (reaper's
    # other child is its guardian, which the counts leave out)
    assert [pid for pid, fd in marked(r.run_id) if not os.close(fd)] == [doc["command_pid"]]
    with open("/proc/%d/task/%d/children" % (r.p.pid, r.p.pid)) as f:
        assert sorted(f.read().split()) == sorted([str(doc["command_pid"]), str(doc["guardian_pid"])])
    r.p.stdin.write(b"end\n")
    assert r.wait(30) == 0, r.stderr
    doc = r.state()
    assert (doc["orphaned_children_total"], doc["reaped_orphans_total"], doc["reaped_children_total"]) == (15, 15, 16)
    assert doc["leaks"] == 0 and doc["escalated"] is False


HELPER = """
    import os, signal, sys, time
    log = sys.argv[1]
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            def on_term(sig, frame):
                with open(log, "a") as f:
                    f.write("TERM\\n")
            signal.signal(signal.SIGTERM, on_term)
            wake = signal_wakeup()
            with open(log, "a") as f:
                f.write("up\\n")
            print("helper", os.getpid(), flush=True)
            await_signals(wake)
        os._exit(0)
    os.wait()
    time.sleep(0.5)
"""


def test_detached_term_ignoring_helper_is_terminated_escalated_and_reaped(run, tmp_path):
    log = tmp_path / "helper.log"
    r = run(["--timeout", "1", "--grace", "1"], signalled_script(HELPER) + [str(log)])
    pid = int(r.line().split()[1])
    helper = os.pidfd_open(pid)
    seen = []
    try:
        r.state()
        assert has_marker(pid, r.run_id)
        while r.p.poll() is None:
            try:
                phase = r.state()["phase"]
            except FileNotFoundError:
                phase = None
            if phase and (not seen or seen[-1] != phase):
                seen.append(phase)
            time.sleep(0.02)
        assert r.wait(30) == 23, r.stderr  # COMMAND succeeded, something leaked
        if seen[-1] != r.state()["phase"]:
            seen.append(r.state()["phase"])  # the last one is written just before the exit
        assert not alive(helper)
        assert log.read_text().splitlines() == ["up", "TERM"]  # SIGTERM first, then SIGKILL
        doc = r.state()
        assert doc["escalated"] is True
        assert doc["termination_signal"] is None  # nobody cancelled the run
        assert doc["runner_exit_code"] == 0
        assert doc["leaks"] == 1
        assert doc["reaped_orphans_total"] == 1 and doc["orphaned_children_total"] == 1
        assert doc["phases"] == ["starting", "running", "draining", "terminating", "exited"]
        # what the poller saw is in that order, and covers every phase that lasts
        assert {"running", "draining", "terminating", "exited"} <= set(seen)
        assert seen == [p for p in doc["phases"] if p in seen]
        assert "killed" in r.stderr
    finally:
        os.close(helper)


def test_state_file_is_0600_atomic_and_never_holds_output(run, tmp_path):
    secret = "OUTPUT-%d-%d" % (os.getpid(), time.monotonic_ns())
    r = run([], script("""
        import os, sys, time
        for i in range(40):
            if os.fork() == 0:
                if os.fork():
                    os._exit(0)
                print(sys.argv[1], flush=True)
                print(sys.argv[1], file=sys.stderr, flush=True)
                os._exit(0)
            os.wait()
            time.sleep(0.03)
        print(sys.argv[1] * 50, flush=True)
        print("ready", flush=True)
        sys.stdin.readline()
    """) + [secret], stdin=subprocess.PIPE)
    reads = 0
    r.expect(secret)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            st = os.stat(r.state_path)
            with open(r.state_path) as f:
                text = f.read()
        except FileNotFoundError:
            continue
        assert stat.S_IMODE(st.st_mode) == 0o600 and stat.S_ISREG(st.st_mode)
        json.loads(text)  # never half a document
        assert secret not in text
        for name in os.listdir(tmp_path):  # the temporary of the atomic replace, too
            if name.startswith(os.path.basename(r.state_path)):
                try:
                    assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600
                except FileNotFoundError:
                    pass
        reads += 1
        if json.loads(text)["reaped_orphans_total"] == 40:
            break
    else:
        raise AssertionError("the 40 orphans were not all reaped")
    r.expect("ready")
    cmd = r.state()["command_pid"]
    # COMMAND does not even hold the document open
    for fd in os.listdir("/proc/%d/fd" % cmd):
        try:
            assert os.readlink("/proc/%d/fd/%s" % (cmd, fd)) != r.state_path
        except FileNotFoundError:
            pass
    r.p.stdin.write(b"end\n")
    assert r.wait(30) == 0
    assert secret in r.stderr  # (stdout carried it too: expect() read it)
    with open(r.state_path) as f:
        text = f.read()
    assert secret not in text
    assert stat.S_IMODE(os.stat(r.state_path).st_mode) == 0o600
    assert reads > 0


def test_state_written_over_a_planted_file_is_still_0600(run, tmp_path):
    path = tmp_path / "planted.json"
    path.write_text("old")
    os.chmod(path, 0o644)
    r = run(["--state", str(path)], ["true"], state=False)
    assert r.wait(30) == 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(path.read_text())["phase"] == "exited"


def unavailable_lines(text):
    return [l for l in text.splitlines() if "process state unavailable" in l]


ORPHANS_THEN_EXIT_5 = """
    import os, time
    for i in range(10):
        if os.fork() == 0:
            os.fork()
            os._exit(0)
        os.wait()
        time.sleep(0.02)
    time.sleep(1.2)
    raise SystemExit(5)
"""


def test_unwritable_state_path_warns_once_and_keeps_the_status(run, tmp_path):
    (tmp_path / "adir").mkdir()
    for path in (tmp_path / "missing" / "state.json", tmp_path / "adir"):
        r = run(["--state", str(path)], script(ORPHANS_THEN_EXIT_5), state=False)
        assert r.wait(30) == 5
        assert len(unavailable_lines(r.stderr)) == 1, r.stderr
        assert str(path) in unavailable_lines(r.stderr)[0]
    assert os.listdir(tmp_path / "adir") == []  # no temporary left behind


def test_unwritable_state_from_the_environment_warns_once(run, tmp_path):
    path = tmp_path / "missing" / "state.json"
    r = run([], script(ORPHANS_THEN_EXIT_5), state=False, env={"REAPER_STATE": str(path)})
    assert r.wait(30) == 5
    assert len(unavailable_lines(r.stderr)) == 1, r.stderr


def test_a_command_that_cannot_be_executed_is_collected_before_the_last_document(run):
    """COMMAND whose exec fails ends at once (started in the run's cgroup it is a fork, not a
    vfork, so reaper may hear of the failure before the end): the last document counts it
    reaped, not alive."""
    for argv, code in [(["/etc/passwd"], 126), (["/nonexistent/program"], 127)] * 5:
        r = run([], argv)
        assert r.wait(60) == code, r.stderr
        doc = r.state()
        assert doc["phase"] == "exited"
        assert (doc["active_children"], doc["reaped_children_total"], doc["runner_exit_code"]) == (0, 1, code), doc
