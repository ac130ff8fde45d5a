/* SPDX-License-Identifier: MIT */
/* exits: every exit status of the reaper command and why it is given (reaper(1), EXIT STATUS;
 * README). Where sysexits.h or the shell has a number for the reason, it is that number, so a
 * CI log reads as it does for other tools. */
#ifndef HARNESS_EXITS_H
#define HARNESS_EXITS_H

/* run: COMMAND's own 0 and nothing leaked; scan: some process matched; reap: nothing leaked */
#define EXIT_OK 0
/* scan: no process matched (as grep and pgrep say "nothing found") */
#define EXIT_NO_MATCH 1
/* reap: the reap itself failed (/proc unreadable, say), so nothing is known about leaks */
#define EXIT_REAP_FAILED 1
/* run: COMMAND succeeded but left processes behind, unless --leak-exit-code says otherwise;
 * LeakSanitizer's default exitcode, so one number means "leaked" across a suite's tools */
#define EXIT_LEAK_DEFAULT 23
/* a bad command line or flag value (EX_USAGE); never a leak exit code, so never ambiguous */
#define EXIT_USAGE 64
/* a requested report file could not be written, and nothing else decides the status
 * (EX_IOERR) */
#define EXIT_REPORT_FAILED 74
/* the result is incomplete: processes may have been missed or left unsignalled (out of
 * descriptors, say); EX_TEMPFAIL: try again with more */
#define EXIT_INCOMPLETE 75
/* COMMAND was found but cannot be executed, or reaper cannot set the run up at all (/proc,
 * namespaces, --cgroup on): as a shell says for a command it cannot run */
#define EXIT_CANNOT_EXEC 126
/* COMMAND was not found (as a shell says) */
#define EXIT_NOT_FOUND 127
/* COMMAND ended by signal N exits 128+N, as in a shell */
#define EXIT_SIGNAL_BASE 128
/* 128+SIGKILL: also COMMAND still there after SIGKILL (uninterruptible sleep), whose end
 * reaper did not see: it had to be killed */
#define EXIT_KILLED (EXIT_SIGNAL_BASE + 9)

#endif
