# SPDX-License-Identifier: MIT
"""Never the caller: `reaper run`, `reap` and `scan` inside real shell pipelines leave their
caller alone (its pipeline, its other jobs, reaper's own guardian), even when a finder matches
reaper's own environment, and keep their exit status when their output pipe closes. Each
pipeline runs under bash; PIPESTATUS says how every member ended."""
import os
import pty
import select
import shutil
import signal
import subprocess
import time
import uuid

import pytest

from cli_util import by_pid, load_json, on_hung_fuse
from procutil import PY, REAPER, alive, pidfds_where, pinned_by, environ, string_at, syscall_stops, wait_gone

MODES = ["on", "off"]
if os.geteuid() != 0:
    MODES = [pytest.param("on", marks=pytest.mark.skip(reason="--cgroup on needs root or a delegated cgroup")), "off"]

# A script's leftovers are waited for until a listing shows N of them running their own
# program (`until [ "$(settled MARK PROG)" -ge N ]`): the fork on its way to exec (a shell's,
# setsid's, env's) already carries the marker, and its command line names the leftover's
# program too. A reap's single pass (--timeout 0) that meets the exec midway reads no
# environment there.
SETTLED = ("settled() { \"$REAPER\" scan --env \"$1\" 2>/dev/null | awk -v p=\"$2\" '$2 == p' | wc -l; }; ")
STUBBORN = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(60)\n"


def sh(script, tmp_path, env=None, timeout=120, wrap=()):
    """Run script under bash -c (REAPER: the command), behind the command line wrap if any;
    returns (PIPESTATUS as a list of ints, CompletedProcess). The script writes its PIPESTATUS
    to $STATUS."""
    status = tmp_path / "status"
    e = {k: v for k, v in os.environ.items() if not k.startswith(("REAPER_", "GITHUB_"))}
    e.update({"REAPER": REAPER, "PY": PY, "STATUS": str(status), "T": str(tmp_path)})
    e.update(env or {})
    r = subprocess.run([*wrap, "bash", "-c", SETTLED + script], capture_output=True, env=e, timeout=timeout)
    assert status.exists(), r.stderr
    return [int(x) for x in status.read_text().split()], r


def cleanup_marked(entry):
    """Kill what still carries entry (a NAME=VALUE unique to the test), by pidfd."""
    fds = [fd for _, fd in pidfds_where(lambda pid: entry.encode() in environ(pid))]
    for fd in fds:
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except ProcessLookupError:
            pass
    left = wait_gone(fds, 10)
    for fd in fds:
        os.close(fd)
    return left


@pytest.fixture
def mark():
    """A NAME=VALUE no other process carries; whatever still carries it at the end is killed
    and fails the test."""
    entry = "REAPER_CALLER_T=%s" % uuid.uuid4().hex
    yield entry
    assert not cleanup_marked(entry), "processes carrying %s were left" % entry


@pytest.mark.parametrize("mode", MODES)
def test_run_marker_in_own_environment_spares_guardian_and_pipeline(mode, mark, tmp_path):
    """The marker is exported to reaper, its guardian, `tee` and the subshell's cat: none of
    them is the run's. The finder is dropped with a warning; the run leaks nothing."""
    statuses, r = sh(
        'export %s; "$REAPER" run --cgroup %s --marker %s --timeout 0 --grace 10 --report "$T/r.json" -- true '
        '2>"$T/err" | tee "$T/out" | (cat >"$T/out2"); echo "${PIPESTATUS[*]}" >"$STATUS"'
        % (mark, mode, mark), tmp_path)
    err = (tmp_path / "err").read_text()
    assert statuses == [0, 0, 0], err
    assert "--marker %s is in reaper's own environment" % mark in err
    rep = load_json(tmp_path / "r.json")
    assert rep["summary"]["leaks"] == 0 and rep["processes"] == [], rep["processes"]


# Where the calling shell's session is: its own, or one whose id reads 0, as for a CI runner's
# steps that share the session of the kernel's first process (here: a session whose leader is
# outside a new pid namespace, which /proc shows the same way), the shell a child of that
# namespace's init or its init itself.
NEWPID = ("unshare", "--pid", "--fork", "--mount-proc")
WRAPS = {"own": (), "id 0": NEWPID + (PY, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"),
         "id 0, shell is init": NEWPID}
SESSIONS = ["own"] + [pytest.param(w, marks=pytest.mark.skipif(os.geteuid() != 0, reason="a new pid namespace needs root"))
                      for w in ("id 0", "id 0, shell is init")]


@pytest.mark.parametrize("session", SESSIONS)
@pytest.mark.parametrize("setsid", ["", "setsid "])
@pytest.mark.parametrize("mode", MODES)
def test_run_marker_on_the_callers_session_is_not_the_run(mode, setsid, session, mark, tmp_path):
    """The marker is not reaper's own, but a pipeline member and a background job of the
    calling shell carry it: they are the caller's session, not the run's (under `setsid
    reaper`, the shell's session is its parent's, the caller's all the same, whatever its id).
    What the run left with it is found all the same (by descent or its cgroup)."""
    wrap = WRAPS[session]
    statuses, r = sh(
        '%s "$PY" -c "import time; time.sleep(600)" & bg=$!\n'
        'until "$REAPER" scan --env %s 2>/dev/null | grep -q time.sleep; do :; done\n'
        '%s"$REAPER" run --cgroup %s --marker %s --timeout 0 --grace 10 --report "$T/r.json" -- '
        '"$PY" -c "import os; os.fork() or os.execv(\'/bin/sleep\', [\'sleep\', \'600\'])" '
        '2>"$T/err" | env %s tee "$T/out"; s="${PIPESTATUS[*]}"\n'
        'kill -0 $bg && echo alive >"$T/bg"; kill -KILL $bg; wait $bg; echo "$s" >"$STATUS"'
        % (mark, mark, setsid, mode, mark, mark), tmp_path, wrap=wrap)
    err = (tmp_path / "err").read_text()
    assert statuses == [23, 0], err
    assert (tmp_path / "bg").exists(), "the caller's background job was signalled: " + err
    rep = load_json(tmp_path / "r.json")
    leaks = [p for p in rep["processes"] if p["leak"]]
    assert len(leaks) == 1 and {"cgroup", "descendant of the run"} & set(leaks[0]["found_by"]), rep["processes"]


def test_reap_own_home_leaves_its_pipeline(mark, tmp_path):
    """HOME=$H is exported: `cat` carries it too, and a leftover in the caller's own session
    and process group (its parent gone, the shell's output its own) is still found."""
    h = tmp_path / "h"
    h.mkdir()
    statuses, r = sh(
        'export HOME="$T/h" %s; { ("$PY" -c "import time; time.sleep(600)" &); '
        'until [ "$(settled %s "$PY")" -ge 1 ]; do :; done; '
        '"$REAPER" reap --home "$T/h" --timeout 0 --grace 10 --report "$T/r.json"; } 2>&1 | cat >"$T/log"; '
        'echo "${PIPESTATUS[*]}" >"$STATUS"' % (mark, mark), tmp_path)
    log = (tmp_path / "log").read_text()
    assert statuses == [23, 0], log
    assert "HOME=%s is in reaper's own environment" % h in log and "SUMMARY: 1 leaked" in log
    rep = load_json(tmp_path / "r.json")
    assert [p["fate"] for p in rep["processes"]] == ["terminated"], rep["processes"]


def test_reap_own_env_marker_leaves_each_member_of_its_job(mark, tmp_path):
    """Job control (set -m): the pipeline is a process group of its own; the member past
    the first reader carries the marker but holds none of reaper's pipes."""
    statuses, r = sh(
        'set -m; export %s; "$REAPER" reap --env %s --timeout 0 --grace 10 2>&1 | cat | cat >"$T/log"; '
        'echo "${PIPESTATUS[*]}" >"$STATUS"' % (mark, mark), tmp_path)
    assert statuses == [0, 0, 0], (tmp_path / "log").read_text()


def test_scan_under_job_control_leaves_its_job_and_lists_the_rest(mark, tmp_path):
    """Job control (set -m): the listing's pipeline is a process group of its own. A member
    of it that holds none of reaper's pipes (a background job of its reader, its stdio on
    /dev/null) is told by its process group alone and is not listed; a leftover of another
    group carrying the same marker is."""
    try:
        statuses, r = sh(
            'set -m; export %s; '
            '("$PY" -c "import os, time; open(os.environ[\'T\'] + \'/left\', \'w\').write(str(os.getpid())); '
            'time.sleep(600)" &) </dev/null >/dev/null 2>&1; until [ -s "$T/left" ]; do :; done; '
            '{ until [ -s "$T/member" ]; do :; done; exec "$REAPER" scan --env %s 2>"$T/err"; } | '
            '{ "$PY" -c "import os, time; open(os.environ[\'T\'] + \'/member\', \'w\').write(str(os.getpid())); '
            'time.sleep(600)" </dev/null >/dev/null 2>&1 & cat; } >"$T/out"; echo "${PIPESTATUS[*]}" >"$STATUS"'
            % (mark, mark), tmp_path)
        err = (tmp_path / "err").read_text()
        assert statuses == [0, 0], err
        left, member = int((tmp_path / "left").read_text()), int((tmp_path / "member").read_text())
        listed = [int(ln.split()[0]) for ln in (tmp_path / "out").read_text().splitlines()]
        assert left in listed and member not in listed, (left, member, listed, err)
    finally:
        assert not cleanup_marked(mark), "a leftover would not die"


@pytest.mark.parametrize("command", ["reap", "scan"])
def test_closed_output_pipe_keeps_the_exit_status(command, mark, tmp_path):
    """The reader is gone before reaper writes a byte: the writes fail (EPIPE), the status is
    the leak code for reap, 0 (found) for scan, never 141."""
    name, value = mark.split("=", 1)
    p = subprocess.Popen([PY, "-c", STUBBORN], env={name: value}, start_new_session=True)
    try:
        rd, wr = os.pipe()
        os.close(rd)
        args = ["--env", mark] + (["--timeout", "0", "--grace", "0.2"] if command == "reap" else [])
        r = subprocess.run([REAPER, command, *args], stdout=wr, stderr=wr, timeout=120)
        os.close(wr)
        assert r.returncode == (23 if command == "reap" else 0), r.returncode
    finally:
        if command == "scan":
            p.kill()
        p.wait()


def test_reap_pipe_to_true_exits_with_the_leak_code(mark, tmp_path):
    statuses, r = sh(
        'setsid -f env %s "$PY" -c "import time; time.sleep(600)"; '
        'until [ "$(settled %s "$PY")" -ge 1 ]; do :; done; '
        '"$REAPER" reap --env %s --timeout 0 --grace 10 2>&1 | true; echo "${PIPESTATUS[*]}" >"$STATUS"'
        % (mark, mark, mark), tmp_path)
    assert statuses == [23, 0], r.stderr


@pytest.mark.parametrize("mode", MODES)
def test_every_collected_leak_reports_its_exit_status(mode, tmp_path):
    """Orphans of the run, ended by reaper and collected by it, each with its wait status,
    however the supervisor's SIGCHLD and the reap's pidfds interleave."""
    run = ("import os, signal, time\n"
           "for i in range(4):\n"
           "    if os.fork() == 0:\n"
           "        if i % 2: signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
           "        open(os.path.join(os.environ['T'], 'ready%d' % i), 'w').close()\n"
           "        while True: time.sleep(60)\n"
           "while len([f for f in os.listdir(os.environ['T']) if f.startswith('ready')]) < 4: time.sleep(0.01)\n")
    for attempt in range(3):
        for f in tmp_path.glob("ready*"):
            f.unlink()
        r = subprocess.run([REAPER, "run", "--cgroup", mode, "--timeout", "0", "--grace", "1", "--report",
                            str(tmp_path / "r.json"), "--", PY, "-c", run], capture_output=True,
                           env=dict(os.environ, T=str(tmp_path)), timeout=120)
        assert r.returncode == 23, r.stderr
        leaks = [p for p in load_json(tmp_path / "r.json")["processes"] if p["leak"]]
        assert len(leaks) == 4, leaks
        # the wait status is the truth: the two that ignore SIGTERM died of SIGKILL; a polite
        # one died of SIGTERM (on a loaded machine maybe after the grace, when it is reported
        # killed all the same)
        for p in leaks:
            assert p["exit_status"] in ((signal.SIGTERM,) if p["fate"] == "terminated"
                                        else (signal.SIGKILL, signal.SIGTERM)), (attempt, p)
        assert sorted(p["exit_status"] for p in leaks)[:2] == [signal.SIGKILL] * 2, leaks


@pytest.mark.parametrize("mode", MODES)
def test_run_process_in_the_callers_process_group_is_the_runs(mode, mark, tmp_path):
    """COMMAND leads a process group of its own; a process of the run that joins the
    caller's group (and carries the --marker) is still the run's: found by descent or its
    cgroup, and reaped."""
    run = ("import os, time\n"
           "group = os.getpgid(os.getppid())\n"  # reaper's: the caller's
           "if os.fork() == 0:\n"
           "    os.setpgid(0, group)\n"
           "    open(os.path.join(os.environ['T'], 'joined'), 'w').close()\n"
           "    while True: time.sleep(60)\n"
           "while not os.path.exists(os.path.join(os.environ['T'], 'joined')): time.sleep(0.01)\n")
    statuses, r = sh('"$REAPER" run --cgroup %s --marker %s --timeout 0 --grace 10 --report "$T/r.json" -- '
                     '"$PY" -c "$RUN" 2>"$T/err"; echo "$?" >"$STATUS"' % (mode, mark), tmp_path, env={"RUN": run})
    err = (tmp_path / "err").read_text()
    assert statuses == [23], err
    leaks = [p for p in load_json(tmp_path / "r.json")["processes"] if p["leak"]]
    assert len(leaks) == 1 and leaks[0]["pgrp"] == os.getpgid(0), leaks
    assert {"cgroup", "descendant of the run"} & set(leaks[0]["found_by"]), leaks


def test_setsid_reap_own_home_leaves_its_pipeline(mark, tmp_path):
    """`setsid reaper reap`: reaper is in a session of its own, its `cat` in the shell's; the
    reader of its output is its pipeline all the same, and the leftover (in a session of its
    own, as a daemon's) is found."""
    h = tmp_path / "h"
    h.mkdir()
    statuses, r = sh(
        'export HOME="$T/h" %s; setsid -f "$PY" -c "import time; time.sleep(600)"; '
        'until [ "$(settled %s "$PY")" -ge 1 ]; do :; done; '
        'setsid "$REAPER" reap --home "$T/h" --timeout 0 --grace 10 --report "$T/r.json" 2>&1 | cat >"$T/log"; '
        'echo "${PIPESTATUS[*]}" >"$STATUS"' % (mark, mark), tmp_path)
    log = (tmp_path / "log").read_text()
    assert statuses == [23, 0], log
    rep = load_json(tmp_path / "r.json")
    assert [p["cmdline"].split()[-1] for p in rep["processes"]] == ["time.sleep(600)"], rep["processes"]


@pytest.mark.parametrize("mode", MODES)
def test_reap_inside_runs_command_leaves_the_runs_guardian(mode, mark, tmp_path):
    """`reaper run -- sh -c '...; reaper reap --env M'` with M exported: the outer run's
    guardian is neither the inner reap's ancestor nor in its session, and carries none of the
    caller's environment: the inner reap finds the leftover only."""
    statuses, r = sh(
        'export %s; "$REAPER" run --cgroup %s --timeout 0 --grace 10 --report "$T/outer.json" -- sh -c '
        '\'setsid -f "$PY" -c "import time; time.sleep(600)"; '
        'until "$REAPER" scan --env %s 2>/dev/null | grep -q "^[0-9]* $PY "; do :; done; '
        'exec "$REAPER" reap --env %s --timeout 0 --grace 10 --report "$T/inner.json"\' 2>"$T/err"; '
        'echo "$?" >"$STATUS"' % (mark, mode, mark, mark), tmp_path)
    err = (tmp_path / "err").read_text()
    assert statuses == [23], err
    inner = load_json(tmp_path / "inner.json")
    assert [p["cmdline"].split()[-1] for p in inner["processes"]] == ["time.sleep(600)"], inner["processes"]
    assert load_json(tmp_path / "outer.json")["summary"]["leaks"] == 0, err


@pytest.mark.parametrize("mode", MODES)
def test_command_scanning_at_once_never_finds_the_runs_guardian(mode, mark, tmp_path):
    """COMMAND's first act is a scan for a marker of the caller's environment: the guardian,
    forked the moment before, already shows no environment in /proc (nobody waits for it to
    clear one), so none of the scans finds it, nor the run's reaper (their ancestor)."""
    statuses, r = sh(
        'export %s; s=""; for i in 1 2 3 4 5 6 7 8; do "$REAPER" run --cgroup %s --timeout 0 --grace 10 -- '
        '"$REAPER" scan --env %s --report "$T/scan$i.json" 2>>"$T/err"; s="$s $?"; done; '
        'echo "$s" >"$STATUS"' % (mark, mode, mark), tmp_path)
    err = (tmp_path / "err").read_text()
    found = [load_json(tmp_path / ("scan%d.json" % i))["processes"] for i in range(1, 9)]
    assert found == [[]] * 8, found
    assert statuses == [1] * 8, err


def test_pipeline_past_its_reader_is_the_callers(mark, tmp_path):
    """A script's `reaper reap | tee log | cat` (one process group, no job control): cat holds
    none of reaper's pipes but reads tee's output; it is the pipeline all the same. A leftover
    writing to the script's own output (a pipe reaper holds too) is still found."""
    statuses, r = sh(
        'export %s; ("$PY" -c "import time; time.sleep(600)" &); '
        'until [ "$(settled %s "$PY")" -ge 1 ]; do :; done; '
        '"$REAPER" reap --env %s --timeout 0 --grace 10 --report "$T/r.json" 2>"$T/err" '
        '| tee "$T/log" | cat >"$T/out"; echo "${PIPESTATUS[*]}" >"$STATUS"' % (mark, mark, mark), tmp_path)
    err = (tmp_path / "err").read_text()
    assert statuses == [23, 0, 0], err
    rep = load_json(tmp_path / "r.json")
    assert [p["cmdline"].split()[-1] for p in rep["processes"]] == ["time.sleep(600)"], rep["processes"]


def test_scan_leaves_its_pipeline_and_lists_the_rest(mark, tmp_path):
    """`reaper scan | tee log` and `reaper scan | tee log | cat` with the marker exported: tee
    reads reaper's output, cat reads tee's; neither is listed. Two leftovers sharing one
    subshell's files are both listed, the second told by the same files as the first, and so
    are two linked by a pipe of their own (of the caller's session, not of its pipeline)."""
    try:
        statuses, r = sh(
            'exec 2>"$T/sh-err"; export %s; ("$PY" -c "import time; time.sleep(600)" & '
            '"$PY" -c "import time; time.sleep(600)" & "$PY" -c "import time; time.sleep(600)" | cat &) '
            '</dev/null >/dev/null 2>&1; until [ "$(settled %s "$PY")" -ge 3 ] && [ "$(settled %s cat)" -ge 1 ]; do :; done; '
            '"$REAPER" scan --env %s 2>"$T/err" | tee "$T/log" >"$T/out1"; s="${PIPESTATUS[*]}"; '
            '"$REAPER" scan --env %s 2>>"$T/err" | tee "$T/log" | cat >"$T/out2"; echo "$s ${PIPESTATUS[*]}" >"$STATUS"'
            % (mark, mark, mark, mark, mark), tmp_path)
        err = (tmp_path / "err").read_text()
        assert statuses == [0, 0, 0, 0, 0], err
        for out in ("out1", "out2"):
            listed = (tmp_path / out).read_text().splitlines()
            assert sorted(ln.split()[-1] for ln in listed) == ["cat"] + ["time.sleep(600)"] * 3, (out, listed)
    finally:
        assert not cleanup_marked(mark), "a leftover would not die"


@pytest.mark.parametrize("own", [0, 1])
def test_scan_leaves_its_pipeline_past_leftovers_of_another_session(own, mark, tmp_path):
    """Leftovers of another session (a pipeline of their own under `setsid`), and with own
    one of the caller's session, are listed; `reaper scan | tee | cat`'s tee and cat are not,
    whichever session the match the listing judged before them was of."""
    try:
        statuses, r = sh(
            'exec 2>"$T/sh-err"; export %s; '
            'setsid -f sh -c \'"$PY" -c "import time; time.sleep(600)" | "$PY" -c "import time; time.sleep(600)"\' '
            '</dev/null >/dev/null 2>&1; [ %d = 0 ] || ("$PY" -c "import time; time.sleep(600)" &) </dev/null >/dev/null 2>&1; '
            'until [ "$(settled %s "$PY")" -ge %d ]; do :; done; '
            '"$REAPER" scan --env %s 2>"$T/err" | tee "$T/log" | cat >"$T/out"; echo "${PIPESTATUS[*]}" >"$STATUS"'
            % (mark, own, mark, 2 + own, mark), tmp_path)
        err = (tmp_path / "err").read_text()
        assert statuses == [0, 0, 0], err
        listed = (tmp_path / "out").read_text().splitlines()
        assert sorted(ln.split()[1] for ln in listed) == sorted(["sh"] + [PY] * (2 + own)), listed
    finally:
        assert not cleanup_marked(mark), "a leftover would not die"


def test_scan_with_few_descriptors_leaves_its_pipeline(mark, tmp_path):
    """`reaper scan | tee log | cat` under `ulimit -n 64`, with more leftovers than reaper may
    hold pidfds for: the matches a listing holds until its pass proves them count as held, so
    the pass keeps the descriptors it needs to read the pipeline (cat is a member past tee):
    every leftover is listed, tee and cat are not."""
    try:
        statuses, r = sh(
            'exec 2>"$T/sh-err"; export %s; for i in $(seq 120); do (exec sleep 600 &); done </dev/null >/dev/null 2>&1; '
            'until [ "$(settled %s sleep)" -ge 120 ]; do :; done; '
            '(ulimit -n 64; "$REAPER" scan --env %s 2>"$T/err" | tee "$T/log" | cat >"$T/out"; '
            'echo "${PIPESTATUS[*]}" >"$STATUS")'
            % (mark, mark, mark), tmp_path)
        err = (tmp_path / "err").read_text()
        assert statuses == [0, 0, 0], err
        listed = (tmp_path / "out").read_text().splitlines()
        assert sorted(ln.split(None, 1)[-1] for ln in listed) == ["sleep 600"] * 120, (listed, err)
    finally:
        assert not cleanup_marked(mark), "a leftover would not die"


def test_scan_into_a_named_fifo_leaves_its_reader(mark, tmp_path):
    """`reaper scan >fifo` with `cat <fifo` reading it (a named pipe, not a shell's `|`): cat,
    which carries the marker as the leftovers do, is the reader of reaper's output, its
    pipeline; the leftovers are listed, cat is not."""
    os.mkfifo(tmp_path / "ff")
    try:
        statuses, r = sh(
            'exec 2>"$T/sh-err"; export %s; for i in 1 2; do (exec sleep 600 &); done </dev/null >/dev/null 2>&1; '
            'until [ "$(settled %s sleep)" -ge 2 ]; do :; done; '
            'cat <"$T/ff" >"$T/out" & "$REAPER" scan --env %s 2>"$T/err" >"$T/ff"; s=$?; wait $!; '
            'echo "$s $?" >"$STATUS"'
            % (mark, mark, mark), tmp_path)
        err = (tmp_path / "err").read_text()
        assert statuses == [0, 0], err
        listed = (tmp_path / "out").read_text().splitlines()
        assert sorted(ln.split(None, 1)[-1] for ln in listed) == ["sleep 600"] * 2, (listed, err)
    finally:
        assert not cleanup_marked(mark), "a leftover would not die"


def test_scan_on_a_terminal_tells_its_leftovers_by_its_own_terminal(mark, tmp_path):
    """`reaper scan | tee log | cat` from a terminal: the leftovers read and write the same
    terminal as reaper's own input (no copy of a terminal is taken; each of their descriptors is
    told by one compare with reaper's own). Every leftover is listed, tee and cat are not."""
    master, slave = pty.openpty()
    try:
        e = {k: v for k, v in os.environ.items() if not k.startswith(("REAPER_", "GITHUB_"))}
        e.update({"REAPER": REAPER, "PY": PY, "STATUS": str(tmp_path / "status"), "T": str(tmp_path)})
        script = ('export %s; for i in 1 2 3; do ("$PY" -c "import time; time.sleep(600)" &) >&0 2>&0; done; '
                  'until [ "$(settled %s "$PY")" -ge 3 ]; do :; done; '
                  '"$REAPER" scan --env %s 2>"$T/err" | tee "$T/log" | cat >"$T/out"; '
                  'echo "${PIPESTATUS[*]}" >"$STATUS"' % (mark, mark, mark))
        r = subprocess.run(["bash", "-c", SETTLED + script], stdin=slave, capture_output=True, env=e, timeout=120)
        assert (tmp_path / "status").read_text().split() == ["0", "0", "0"], r.stderr
        listed = (tmp_path / "out").read_text().splitlines()
        assert sorted(ln.split()[-1] for ln in listed) == ["time.sleep(600)"] * 3, listed
    finally:
        os.close(slave)
        os.close(master)
        assert not cleanup_marked(mark), "a leftover would not die"


# where the leftovers' files come from: (the script's own files, the leftovers', reaper's, M's)
HOLDERS = {
    # the script's own output: the shell, an ancestor of reaper, holds it on fd 1 and 2, and
    # reaper inherits it on fd 2 (the leftovers' fd 2 is told by reaper's own)
    "reaper-holds-it": ('exec >"$T/shared" 2>&1 </dev/null', "", "", "</dev/null"),
    # a log only the leftovers hold, on fd 1 and 2 (reaper's fd 0 and 2 are /dev/null, fd 1
    # its pipe): told by its link at each (a regular file is never copied: see
    # test_scan_holds_no_leftovers_file_a_teardown_unmounts)
    "only-the-leftovers-hold-it": ('exec 2>"$T/shared" 4>>"$T/log"', "</dev/null >&4 2>&4",
                                   "</dev/null 2>/dev/null", "</dev/null 2>&4"),
}


@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_scan_tells_files_the_leftovers_share_from_its_pipeline(holder, mark, tmp_path):
    """Leftovers of the caller's session write to one file (HOLDERS), and so does a member of
    `reaper scan | { M & tee log; } | cat` whose only pipe is its fd 1, into cat: the
    leftovers' files are told to be no pipe, M's fd 1 is still seen to be a pipe
    (M is the pipeline's): the leftovers are listed, M is not (tee and cat do not carry the
    marker: M is judged by its own descriptors, not by a look at the pipeline another match
    made first)."""
    name = mark.split("=", 1)[0]
    setup, left, own, member = HOLDERS[holder]
    try:
        statuses, r = sh(
            '%s; export %s; '
            'for i in 1 2 3; do ("$PY" -c "import time; time.sleep(600)" &) %s; done; '
            'until [ "$(settled %s "$PY")" -ge 3 ]; do :; done; '
            '(until [ -e "$T/ready" ]; do :; done; "$REAPER" scan --env %s %s) | '
            '{ "$PY" -c "import time; open(\'$T/ready\', \'w\'); time.sleep(2)" %s >&3 3>&- & '
            'env -u %s tee "$T/log"; wait; } 3>&1 | env -u %s cat >"$T/out"; echo "${PIPESTATUS[*]}" >"$STATUS"'
            % (setup, mark, left, mark, mark, own, member, name, name), tmp_path)
        assert statuses == [0, 0, 0], (tmp_path / "shared").read_text()
        listed = (tmp_path / "out").read_text().splitlines()
        assert sorted(ln.split()[-1] for ln in listed) == ["time.sleep(600)"] * 3, listed
    finally:
        assert not cleanup_marked(mark), "a leftover would not die"


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a FUSE file system needs root")
def test_scan_takes_no_copy_of_a_file_whose_close_asks_its_server(mark, tmp_path):
    """A leftover of the caller's session holds, on fd 1, a file of a FUSE server that stopped
    answering and whose files are closed with a FLUSH: a copy of it would send one when closed
    and wait forever. `reaper scan | cat` reads its link and ends, listing it. (The leftover
    opens the file onto fd 1 itself: any close of it would wait too.)"""
    if not os.path.exists("/dev/fuse") or not shutil.which("unshare"):
        pytest.skip("no /dev/fuse or no unshare(1) here")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    opened = str(tmp_path / "opened")
    leftover = "import os, time; os.close(1); os.open(os.environ['M'] + '/f', os.O_RDONLY); time.sleep(600)"
    script = (SETTLED + 'export %s; ("$PY" -c "$L" &) </dev/null 2>/dev/null; until [ -e "$O" ]; do sleep 0.01; done; '
              'until [ "$(settled %s "$PY")" -ge 1 ]; do :; done; '
              '"$REAPER" scan --env %s 2>/dev/null </dev/null | cat >"$T/out"' % (mark, mark, mark))
    e = dict(os.environ, HUNG_FUSE_FLUSH="1", M=str(mnt), O=opened, T=str(tmp_path), PY=PY, REAPER=REAPER, L=leftover)
    try:
        _, _, err = on_hung_fuse(mnt, opened, ["bash", "-c", script], env=e)
        listed = (tmp_path / "out").read_text().splitlines()
        assert [ln.split()[-1] for ln in listed] == ["time.sleep(600)"], (listed, err)
    finally:
        assert not cleanup_marked(mark), "a leftover would not die"


def held_at_look_at(reaper, pid):
    """Follow reaper (started traced: PTRACE_TRACEME) until its first look at pid's
    descriptors (a link or fdinfo of pid's read, or a compare with one of them); it stays
    stopped there. False when it ended first."""
    for op, nr, args in syscall_stops(reaper):
        if op == 1 and nr == 312 and pid in (args[0], args[1]):  # kcmp
            return True
        if op == 1 and nr in (257, 267, 332):  # openat, readlinkat, statx: the path's argument
            if string_at(reaper, args[1]).startswith(("%d/fd" % pid, "/proc/%d/fd" % pid)):
                return True
    return False


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_scan_holds_no_leftovers_file_a_teardown_unmounts(mark, tmp_path):
    """`reaper scan | cat` in the session of two leftovers, the first writing a log on a tmpfs
    of its own: held at its look at the second (the first judged, the pass not over), the
    first exits and its tmpfs is unmounted, as a teardown does right after its leftover is
    gone. A copy of the log, kept by the pass to tell others that share it, would be the
    file's last holder: the umount would fail with EBUSY (and an exec of it with ETXTBSY)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    name, value = mark.split("=", 1)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "reaper-test", str(mnt)], check=True)
    log = os.open(mnt / "log", os.O_WRONLY | os.O_CREAT, 0o644)
    left = [subprocess.Popen([PY, "-c", "import time; time.sleep(600)"], env={name: value}, stdin=subprocess.DEVNULL,
                             stdout=out, stderr=out) for out in (log, subprocess.DEVNULL)]
    os.close(log)
    scan = subprocess.Popen([REAPER, "scan", "--env", mark], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, preexec_fn=lambda: libc.ptrace(0, 0, None, None))
    try:
        assert held_at_look_at(scan.pid, left[1].pid), "the scan never looked at the second leftover"
        left[0].kill()
        left[0].wait()
        unmounted = libc.umount2(str(mnt).encode(), 0) == 0
        assert unmounted, "umount: " + os.strerror(ctypes.get_errno())
    finally:
        libc.ptrace(17, scan.pid, None, None)  # PTRACE_DETACH
        out = scan.communicate(timeout=120)[0].decode()
        for p in left:
            p.kill()
            p.wait()
        if os.path.ismount(mnt):
            subprocess.run(["umount", str(mnt)], check=True)
    assert sorted(int(ln.split()[0]) for ln in out.splitlines()) == sorted(p.pid for p in left), out


# in a mount namespace of its own: a /dev of a tmpfs with a /dev/null of its own, a leftover
# (its pid printed) writing to it; at a line, the leftover killed and /dev unmounted (the
# status printed); at the next, the end
CONTAINER = r"""
import os, stat, subprocess, sys
subprocess.run(["mount", "-t", "tmpfs", "reaper-test", "/dev"], check=True)
os.mknod("/dev/null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
null = os.open("/dev/null", os.O_RDWR)
left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=dict([sys.argv[1].split("=", 1)]),
                        stdin=null, stdout=null, stderr=null)
os.close(null)
print(left.pid, flush=True)
sys.stdin.readline()
left.kill()
left.wait()
print(subprocess.run(["umount", "/dev"]).returncode, flush=True)
sys.stdin.readline()
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace of its own needs root")
def test_scan_holds_no_containers_dev_null_its_teardown_unmounts(mark, tmp_path):
    """As test_scan_holds_no_leftovers_file_a_teardown_unmounts, the first leftover's files
    being a container's /dev/null (a memory device on its own /dev, in a mount namespace of
    its own): its /dev is unmounted the moment it exits, the scan held between the two."""
    import ctypes
    if not shutil.which("unshare"):
        pytest.skip("no unshare(1) here")
    libc = ctypes.CDLL(None, use_errno=True)
    name, value = mark.split("=", 1)
    box = subprocess.Popen(["unshare", "--mount", "--propagation", "private", PY, "-c", CONTAINER, mark],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    scan = None
    try:
        first = int(box.stdout.readline())
        second = subprocess.Popen([PY, "-c", "import time; time.sleep(600)"], env={name: value},
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        scan = subprocess.Popen([REAPER, "scan", "--env", mark], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, preexec_fn=lambda: libc.ptrace(0, 0, None, None))
        assert held_at_look_at(scan.pid, second.pid), "the scan never looked at the second leftover"
        box.stdin.write("\n")
        box.stdin.flush()
        assert box.stdout.readline().strip() == "0", "the container's /dev stayed busy after its leftover exited"
    finally:
        if scan:
            libc.ptrace(17, scan.pid, None, None)  # PTRACE_DETACH
            out = scan.communicate(timeout=120)[0]
            second.kill()
            second.wait()
        box.communicate("\n", timeout=60)
    assert sorted(int(ln.split()[0]) for ln in out.splitlines()) == [first, second.pid], out


@pytest.mark.parametrize("sub", ["scan", "reap"])
def test_a_member_that_takes_its_pipe_after_the_pass_read_the_pipeline_is_left_alone(sub, mark, tmp_path):
    """`reaper scan | tee | cat`: a pass reads the pipeline's members at the first leftover
    holding a pipe of its own; the caller's cat takes its pipe onto fd 0 and execs (carrying the
    marker) only after that, as a shell's child between its fork and its dup2 does. It is a
    member all the same: never listed, never killed (the leftovers are)."""
    cmd = "scan --env %s" % mark if sub == "scan" else "reap --env %s --timeout 0 --grace 0" % mark
    try:
        statuses, r = sh(
            'export %s; for i in $(seq 150); do (sleep 300 | sleep 300 &) </dev/null >/dev/null 2>&1; done; '
            'until [ "$(settled %s sleep)" -ge 300 ]; do :; done; '
            '"$REAPER" %s 2>"$T/err" | tee "$T/log" | '
            '(exec 3<&0 0</dev/null; sleep 0.02; exec 0<&3 3<&-; exec cat) >"$T/out"; '
            'echo "${PIPESTATUS[*]}" >"$STATUS"' % (mark, mark, cmd), tmp_path)
        out = (tmp_path / "out").read_text() + (tmp_path / "err").read_text()
        assert statuses[1:] == [0, 0], (statuses, out)
        assert not [ln for ln in out.splitlines() if ln.split()[-1:] == ["cat"]], out
    finally:
        assert not cleanup_marked(mark), "a leftover would not die"


def test_reap_keeps_no_copy_of_a_leftovers_pipe_while_it_waits(mark, tmp_path):
    """What a match holds on fd 0-2 is read through copies of its files, taken in a pass and
    closed when it ends: a leftover that exits by itself has closed its pipe for good, and the
    pipe's reader sees its end while reaper still waits for another leftover."""
    name, value = mark.split("=", 1)
    rd, wr = os.pipe()
    go = tmp_path / "go"
    first = subprocess.Popen([PY, "-c", "import os, time\nwhile not os.path.exists(%r): time.sleep(0.01)" % str(go)],
                             env={name: value}, stdin=subprocess.DEVNULL, stdout=wr)
    os.close(wr)
    second = subprocess.Popen([PY, "-c", "import time; time.sleep(600)"], env={name: value},
                              start_new_session=True)
    reap = subprocess.Popen([REAPER, "reap", "--env", mark, "--timeout", "120", "--grace", "10"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        pidfd = os.pidfd_open(reap.pid)
        # the reap's first pass has pinned both (and read their descriptors) once it holds
        # pidfds of them
        end = time.monotonic() + 60
        while not {first.pid, second.pid} <= pinned_by(reap.pid) and time.monotonic() < end:
            time.sleep(0.01)
        assert {first.pid, second.pid} <= pinned_by(reap.pid), "the reap never found both"
        go.touch()
        first.wait(30)
        ready, _, _ = select.select([rd], [], [], 30)
        assert ready and os.read(rd, 1) == b"", "the leftover's pipe stayed open after it exited"
        assert not select.select([pidfd], [], [], 0)[0], "the reap ended before the check"
    finally:
        os.close(rd)
        second.kill()
        second.wait()
        if first.poll() is None:
            first.kill()
            first.wait()
        reap.communicate(timeout=120)
        os.close(pidfd)
