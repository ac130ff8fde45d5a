/* SPDX-License-Identifier: MIT */
/* home: the trust check of `reaper run --home DIR`. DIR becomes COMMAND's HOME (rc files run
 * from it) and a kill marker, so only a directory nobody else controls is taken: a real
 * directory (not a symlink), owned by us, not writable by group or others, reached through
 * parents nobody else controls. */
#ifndef HARNESS_HOME_H
#define HARNESS_HOME_H

/* What home_check returns when DIR breaks a rule: a refusal, not a failure. */
#define HOME_REFUSED 1

/* 0 when home may be the run's HOME (created 0700, with its missing parents, where it does not
 * exist); HOME_REFUSED with *why naming the rule it breaks; -errno when it cannot be created or
 * opened, with *why saying which. */
int home_check(const char *home, const char **why);

#endif
