# SPDX-License-Identifier: MIT
"""subreaper.py COMMAND [ARG...]: runs COMMAND as a child subreaper that waits for every
process reparented to it, as an init does; exits as COMMAND did. Tests run a pytest under it
to see where that pytest's orphans go, and that they vanish when they exit."""
import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    sys.exit(f"subreaper.py: prctl: {os.strerror(ctypes.get_errno())}")
command = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)
while True:
    pid, status = os.wait()
    if pid == command:
        break
while True:  # the orphans that are zombies already; one still running is not waited for
    try:
        if os.waitpid(-1, os.WNOHANG)[0] == 0:
            break
    except ChildProcessError:
        break
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
