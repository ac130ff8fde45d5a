/* SPDX-License-Identifier: MIT */
/* quietfs: see quietfs.h. */
#define _GNU_SOURCE
#include "quietfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procfs.h"

int quietfs_where(int procfd, pid_t pid, int fd, unsigned long long *mnt_id, unsigned long *ino)
{
	char what[32];
	struct sbuf b = { 0 };
	snprintf(what, sizeof what, "fdinfo/%d", fd);
	ssize_t n = procfs_read(procfd, pid, what, &b);
	const char *text = n > 0 ? b.p : "";
	if (n > 0)
		b.p[n] = 0;
	const char *mnt = strstr(text, "mnt_id:"), *in = strstr(text, "\nino:");
	int r = mnt && in ? 0 : n < 0 ? (int)n : -ENOENT;
	if (!r) {
		*mnt_id = strtoull(mnt + 7, NULL, 10);
		*ino = strtoul(in + 5, NULL, 10);
	}
	sbuf_free(&b);
	return r;
}

/* Their files' close drops a reference and nothing more while others hold them; a last one
 * (every other holder gone meanwhile) does what their last holder's exit would have done,
 * with the local disk at most. Overlayfs is not among them: its flush is its lower file
 * system's. */
static const char *const quiet_types[] = { "ext2", "ext3", "ext4", "xfs", "tmpfs", "ramfs" };

static int quiet_type(const char *t, size_t len)
{
	for (size_t i = 0; i < sizeof quiet_types / sizeof *quiet_types; i++)
		if (strlen(quiet_types[i]) == len && !memcmp(quiet_types[i], t, len))
			return 1;
	return 0;
}

int quietfs_mount(int procfd, pid_t self, unsigned long long mnt_id)
{
	struct sbuf b = { 0 };
	ssize_t n = procfs_read(procfd, self, "mountinfo", &b);
	int quiet = 0;
	if (n > 0)
		b.p[n] = 0;
	/* a line: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - TYPE SOURCE OPTIONS (a
	 * space in a path shown as \040: " - " only ends the tags) */
	for (const char *l = n > 0 ? b.p : "", *end; *l; l = *end ? end + 1 : end) {
		end = strchrnul(l, '\n');
		char *after;
		if (strtoull(l, &after, 10) != mnt_id || after == l || *after != ' ')
			continue;
		const char *sep = memmem(l, (size_t)(end - l), " - ", 3);
		if (sep) {
			const char *t = sep + 3;
			quiet = quiet_type(t, strcspn(t, " \n"));
		}
		break;
	}
	sbuf_free(&b);
	return quiet;
}
