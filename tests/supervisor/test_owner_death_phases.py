# SPDX-License-Identifier: MIT
"""Owner death at each phase of a run: a reaper SIGKILLed while it waits for COMMAND, while
it drains the leftovers (the reap's wait), or in the grace after SIGTERM still has its run
ended and its cgroup removed by the guardian, which then exits itself."""
import os
import signal

import pytest

from conftest import marked, script
from procutil import alive, wait_gone
from test_cgroup import cgroups_of_run, needs_cgroup

# COMMAND leaves an env -i, setsid, TERM-ignoring daemon (found by the cgroup only), then
# waits or exits as the phase wants.
LEAVER = """
    import os, signal, sys, time
    r, w = os.pipe2(os.O_CLOEXEC)  # EOF once the daemon has exec'd, SIGTERM ignored
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.execve("/bin/sleep", ["sleep", "300"], {})
        os._exit(0)
    os.close(w)
    os.wait()
    os.read(r, 1)
    print("ready", flush=True)
    if sys.argv[1] == "wait":
        time.sleep(300)
"""


@needs_cgroup
@pytest.mark.parametrize("phase", ["running", "draining", "terminating"])
def test_sigkilled_in_each_phase_the_guardian_ends_the_run_and_its_cgroup(run, phase):
    args = ["--cgroup", "on", "--timeout", "120", "--grace", "120"]
    r = run(args, script(LEAVER) + ["exit" if phase == "draining" else "wait"])
    r.expect("ready")
    doc = r.wait_state(lambda d: d["phase"] == ("draining" if phase == "draining" else "running"))
    g = doc["guardian_pid"]
    assert g
    gfd = os.pidfd_open(g)
    try:
        if phase == "terminating":
            r.signal(signal.SIGTERM)
            r.wait_state(lambda d: d["phase"] == "terminating")
        assert cgroups_of_run(r.run_id)
        r.signal(signal.SIGKILL)
        assert r.wait(30) == -signal.SIGKILL
        assert wait_gone([gfd], 60) == [], "the guardian outlived its job"
        assert marked(r.run_id) == []
        assert cgroups_of_run(r.run_id) == [], "the run's cgroup is still there"
    finally:
        os.close(gfd)
