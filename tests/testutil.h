/* SPDX-License-Identifier: MIT */
/* testutil: small helpers the Check suites share to run real processes and look at them in
 * /proc. Every helper returns 0 (or a count) or a negative errno; none of them signals a
 * process it was not handed by identity (pid + start time). */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A process we started (or were told about), pinned by identity. */
struct tu_proc {
	pid_t pid;
	uint64_t start_time; /* stat field 22; 0 when it was gone before we looked */
	int pidfd;           /* -1 when closed */
};

/* The build directory: $REAPER_BUILD, else the directory above this test binary's. */
const char *tu_build_dir(void);
/* "<build>/fixtures/NAME" (or "<build>/NAME" for "reaper") into buf. */
int tu_build_path(char *buf, size_t len, const char *name);

/* For a test that runs the build's programs as another user, who may not reach the checkout
 * (a 0700 home, a mktemp -d clone): a private copy of reaper and the fixtures in a fresh
 * directory under /tmp, laid out like the build directory and searchable by every user
 * (files 0755, owned by the caller). dir gets its path, for REAPER_BUILD in that user's
 * process; tu_private_build_remove() deletes it. */
int tu_private_build(char *dir, size_t len);
int tu_private_build_remove(const char *dir);

/* A marker unique to this process and call: "NAME=<prefix>-<pid>-<n>-<random>" into buf. */
int tu_unique_marker(char *buf, size_t len, const char *name, const char *prefix);

/* Fork and execve argv[0] (a path) with exactly envp as the environment (NULL: ours).
 * out_fd/err_fd >= 0 become its stdout/stderr. p gets pid, start time and a pidfd. */
int tu_spawn(struct tu_proc *p, char *const argv[], char *const envp[], int out_fd, int err_fd);
/* Spawn argv, read every pid it prints on stdout (up to max), wait for it; *status gets its
 * wait status. Returns how many pids were read, or -errno. */
int tu_run_pids(char *const argv[], char *const envp[], pid_t *pids, size_t max, int *status);
/* The same for fixture NAME with args (NULL-terminated, may be NULL). */
int tu_fixture(const char *name, char *const args[], char *const envp[], pid_t *pids, size_t max);

/* Stat field 22 of pid, 0 when there is no such process. */
uint64_t tu_start_time(pid_t pid);
/* Its state letter (R S D Z T ...), 0 when there is no such process. */
char tu_state(pid_t pid);
/* 1 while pid is a live (not zombie) process with this start time (0: any start time). */
int tu_alive(pid_t pid, uint64_t start_time);
/* 1 while pid exists at all with this start time, zombie or not. */
int tu_exists(pid_t pid, uint64_t start_time);
/* Wait until pid shows up in /proc (0) or timeout seconds pass (-ETIMEDOUT). */
int tu_wait_present(pid_t pid, double timeout);
/* Wait until pid with this start time is no longer in /proc at all, zombie included (0),
 * or timeout seconds pass (-ETIMEDOUT). */
int tu_wait_gone(pid_t pid, uint64_t start_time, double timeout);

/* Pin pid (verifying start_time when not 0): fills p. -ESRCH when gone or replaced. */
int tu_pin(struct tu_proc *p, pid_t pid, uint64_t start_time);
/* SIGKILL a pinned process through its pidfd and wait until it is gone (collecting it when it
 * is our child). Safe on a process that already exited. Closes the pidfd. */
int tu_kill_wait(struct tu_proc *p);
/* Collect our child p without signalling it: its wait status, or -errno. Closes the pidfd. */
int tu_wait_exit(struct tu_proc *p);
void tu_proc_close(struct tu_proc *p);

/* Live (not zombie) processes whose environ holds exactly entry "NAME=VALUE"; up to max pids
 * into pids (may be NULL). Returns how many there are. */
int tu_marked(const char *entry, pid_t *pids, size_t max);
/* Kill (pidfd, identity-checked) every live process carrying entry and wait until each is
 * gone; for test teardown. Returns how many were killed. */
int tu_kill_marked(const char *entry);
/* Zombie children of the calling process, as /proc shows them. */
int tu_zombie_children(void);
/* The same, with up to max of their pids into pids. */
int tu_zombie_pids(pid_t *pids, size_t max);
/* Live children of the calling process. */
int tu_live_children(void);

/* Seconds on the monotonic clock. */
double tu_now(void);

/* Check suites. */
struct Suite;
/* Add the closing test case "zz_nothing_left": no live process carries marker (what it
 * finds it kills, then fails) and no zombie child is left. marker must outlive the run. */
void tu_add_nothing_left(struct Suite *s, const char *marker);
/* Run s with Check's defaults (CK_FORK unless CK_FORK=no); the exit status for main. After
 * Check's own summary it prints "N not run (need WHAT)" with each test that was not
 * registered (tu_add_test_if), and appends them to $TESTS_NOT_RUN_FILE when that is set, so
 * that a green run never hides the tests that did not run. */
int tu_run_suite(struct Suite *s);

/* Register tf in tc only when can_run; otherwise count it as not run, needing `need` (a few
 * words: "root", "a writable cgroup2") for the reason `why`. A test that cannot run here is
 * never registered to pass without looking: Check would count it as passed. */
struct TCase;
struct TTest;
void tu_add_test_if(struct TCase *tc, const struct TTest *tf, int can_run, const char *need, const char *why);
/* 1 when the effective capability set holds cap (CAP_SYS_ADMIN, ...). */
int tu_have_cap(int cap);
/* A test that needs root (euid 0 with the capabilities root has outside a container's
 * restrictions: CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, CAP_KILL). */
int tu_is_root(void);
#define tcase_add_root_test(tc, tf, why) tu_add_test_if((tc), (tf), tu_is_root(), "root", (why))

#endif
