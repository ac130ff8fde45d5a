# SPDX-License-Identifier: MIT
"""A process that misbehaves on request, for the reaper tests.

leaker.py [--daemon] [--ignore-term] [--pidfile F] [--sleep S] TAG
  --daemon       double fork + setsid: the caller gets its exit status at once and the
                 worker is orphaned (reparented to the nearest subreaper)
  --ignore-term  SIGTERM is ignored
  --pidfile F    the worker writes its pid there once its signal setup is done
  --sleep S      how long the worker lives (default 600 s)
  --until F      the worker exits as soon as file F exists
TAG only makes the command line unique.
"""
import argparse
import os
import signal
import time

ap = argparse.ArgumentParser()
ap.add_argument("--daemon", action="store_true")
ap.add_argument("--ignore-term", action="store_true")
ap.add_argument("--pidfile")
ap.add_argument("--sleep", type=float, default=600.0)
ap.add_argument("--until", help="exit as soon as this file exists")
ap.add_argument("tag")
a = ap.parse_args()

if a.daemon:
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
if a.ignore_term:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if a.pidfile:
    tmp = a.pidfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(os.getpid()))
    os.rename(tmp, a.pidfile)
deadline = time.monotonic() + a.sleep
while time.monotonic() < deadline:
    if a.until and os.path.exists(a.until):
        break
    time.sleep(0.01 if a.until else deadline - time.monotonic())
