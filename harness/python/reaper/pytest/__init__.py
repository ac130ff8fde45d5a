# SPDX-License-Identifier: MIT
"""pytest plugin: every test is checked for the processes it leaves behind.

Installed, it is registered as the ``reaper`` plugin but checks nothing until asked for:
``--reaper`` on the command line or ``reaper = true`` in the ini file. Not installed, load it
with ``-p reaper.pytest_plugin`` (the same form works installed too) and enable it the same way.

* With a writable cgroup2 (``--reaper-cgroup auto``, the default), each test that starts
  something has a cgroup below the session's, made at its first spawn: pytest moves itself
  into it then, runs in the session's for wider fixtures, and moves out before the check
  when something besides pytest is in it; the check reaps what stays in the test's cgroup
  plus what the two ways below find. A test's cgroup that holds only pytest at its end is
  where pytest waits and the next test that starts something runs (no move: each one waits
  for an RCU grace period); what starts there between tests is the session's. pytest's
  process semantics stay the host's: no subreaper, no zombie collected.
* Without one (markers and descent) the pytest process adopts orphans for the session, so
  what a test detaches reparents to it; a background thread collects the zombies of the
  orphans it adopted as they exit (never one that may be a child this process started
  itself, see _Collector), so none piles up and code waiting for a pid to vanish does not
  wait in vain.
* A test that started nothing (no spawn seen, no pid given out since it began) is not
  scanned at all. In any case:
* What a test leaves is found three ways: its marker (``REAPER_PYTEST=<session>-<n>``, with
  ``REAPER_TEST=<nodeid>``, in ``os.environ`` from its first function-scoped fixture to its
  last teardown, so every program it starts carries them); descent (every process under
  pytest started after the test began that carries no other test's marker: children forked
  without exec, ``multiprocessing`` workers, and processes caught between fork and exec);
  and what wider-scoped fixtures (and the threads they started) start meanwhile belongs to
  the session, not the test.
* A check that cannot be completed is a ``ReaperIncompleteWarning``; what it found is still
  the test's error.
* Children pytest itself started (what ``os.fork``, ``os.forkpty``, ``os.posix_spawn`` or
  ``subprocess.Popen`` returned while the plugin is active) are signalled when they leak but
  never waited for: their exit status stays for their owner (a ``Popen`` object reads
  ``returncode -9``), and the report says "host child".
* After the test's fixtures are torn down: a garbage collection when a process of the test is still there (finalizers close what
  reference cycles held; ``--reaper-no-gc`` turns it off), then ``--reaper-timeout`` seconds
  for the leftovers to exit, then SIGTERM and ``--reaper-grace`` seconds, then SIGKILL
  (identity-checked); the test gets an error at teardown listing each leaked process.
* A pytest session inside a checked test (pytester, a subprocess) leaves the check to the
  enclosing session: what its tests leave is the enclosing test's (``--reaper-nested``
  checks it anyway, for testing plugins).
* What the session's threads start after its check is still the session's; it is ended at
  pytest's exit, from when on no other thread starts anything.
* ``@pytest.mark.reaper(timeout=..., allow=[globs], check=False)`` per test;
  ``--reaper-report FILE`` writes the session's leaks as JSON.
"""

# The modules, each one concept: options (command line, ini), scope (whose a spawn is), host
# (the children this process starts, the fork paths), spawn (the interception and its table of
# patches), mp (multiprocessing), cgroups, collector (adopted orphans' zombies), check (one
# test's), quick (whether a test's end may skip its scan), session, xdist, reports; hooks (the
# module-level hooks, which reaper.pytest_plugin, the module pytest loads, carries).
