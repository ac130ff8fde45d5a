# SPDX-License-Identifier: MIT
"""Why a leak was still running, in every format: a leftover that ignores SIGTERM, one that
is stopped (SIGSTOP), one blocked reading the run's stdin."""
import os
import subprocess
import xml.etree.ElementTree as ET

from cli_util import load_json
from procutil import PY, REAPER, ROOT, kill_identified, start_time

# The run's COMMAND: starts the three, waits until each is in the state the test is about,
# writes their pids, exits. What it starts is re-parented to reaper and reaped at once.
RUNNER = r'''
import os, signal, subprocess, sys, time
out = sys.argv[1]
def until(cond, what):
    deadline = time.monotonic() + 60
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)
def status(pid, key):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(key + ":"):
            return line.split()[1]
def state(pid):
    return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
stubborn = subprocess.Popen([sys.executable, "-c",
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)"],
    stdin=subprocess.DEVNULL)
until(lambda: int(status(stubborn.pid, "SigIgn"), 16) >> (signal.SIGTERM - 1) & 1, "SIGTERM ignored")
stopped = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL)
fd = os.pidfd_open(stopped.pid)
until(lambda: os.readlink("/proc/%d/exe" % stopped.pid).endswith("/sleep"), "sleep exec'd")
signal.pidfd_send_signal(fd, signal.SIGSTOP)
until(lambda: state(stopped.pid) == "T", "stopped")
reader = subprocess.Popen(["cat"])  # stdin: the run's
until(lambda: os.readlink("/proc/%d/exe" % reader.pid).endswith("/cat") and state(reader.pid) == "S"
      and open("/proc/%d/wchan" % reader.pid).read() not in ("", "0"), "cat waits")
open(out + ".tmp", "w").write("%d %d %d" % (stubborn.pid, stopped.pid, reader.pid))
os.rename(out + ".tmp", out)
'''


def test_why_each_leak_was_still_running_in_every_format(tmp_path):
    pids, report, junit = tmp_path / "pids", tmp_path / "r.json", tmp_path / "r.xml"
    env = {k: v for k, v in os.environ.items() if k not in ("REAPER_TIMEOUT", "REAPER_GRACE", "NO_COLOR")}
    env["GITHUB_ACTIONS"] = "true"
    rd, wr = os.pipe()  # the run's stdin: held open by the test, so cat never sees its end
    try:
        r = subprocess.run([REAPER, "run", "--timeout", "0", "--grace", "1", "--report", str(report),
                            "--junit", str(junit), "--", PY, "-c", RUNNER, str(pids)],
                           stdin=rd, capture_output=True, env=env, timeout=300)
    finally:
        os.close(rd)
        os.close(wr)
    left = [int(x) for x in pids.read_text().split()] if pids.exists() else []
    try:
        assert r.returncode == 23, (r.stdout, r.stderr)
        stubborn, stopped, reader = left
        procs = {p["pid"]: p for p in load_json(report)["processes"]}

        why = procs[stubborn]["why"]
        assert why["sigterm"] == "ignored" and not why["stopped"] and why["traced_by"] is None
        assert why["wchan"] and why["summary"].startswith("ignores SIGTERM; waits in " + why["wchan"])
        assert procs[stubborn]["fate"] == "killed"

        why = procs[stopped]["why"]
        assert why["stopped"] is True and why["sigterm"] == "default"
        # it waits in its stop (wchan do_signal_stop), which the summary does not repeat
        assert why["summary"].startswith("stopped (state T)") and "waits in" not in why["summary"]
        assert procs[stopped]["fate"] == "killed"

        why = procs[reader]["why"]
        assert why["holds_stdin"] is True and why["sigterm"] == "default" and not why["stopped"]
        assert why["wchan"] and "pipe" in why["wchan"], why
        assert why["summary"] == "waits in %s; holds the run's stdin" % why["wchan"]
        assert "the run's stdin" in procs[reader]["holdings"]["summary"]
        assert {"kind": "input", "fd": 0, "what": "the run's stdin"} in procs[reader]["holdings"]["held"]

        err = r.stderr.decode()
        for pid in left:
            assert "still running: " + procs[pid]["why"]["summary"] in err, err

        messages = {}
        for case in ET.parse(junit).getroot().iter("testcase"):
            f = case.find("failure")
            messages[int(f.get("message").split()[1])] = f
        for pid in left:
            assert messages[pid].get("message").endswith("; still running: " + procs[pid]["why"]["summary"])
            assert "why:      " + procs[pid]["why"]["summary"] in messages[pid].text

        notes = [x for x in r.stdout.decode().splitlines() if x.startswith("::error ")]
        for pid in left:
            (line,) = [x for x in notes if "::pid %d " % pid in x]
            assert "; still running: " + procs[pid]["why"]["summary"] in line, line
    finally:
        for pid in left:
            st = start_time(pid)
            if st:
                kill_identified(pid, st)


def test_the_schema_documents_every_why_field():
    doc = (ROOT / "docs" / "report-schema.md").read_text()
    for key in ("why", "summary", "sigterm", "stopped", "traced_by", "wchan", "tty", "holds_output", "holds_stdin",
                "reparented", "started_at"):
        assert "`%s`" % key in doc, key
