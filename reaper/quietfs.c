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
static const char *const quiet[] = { "ext2", "ext3", "ext4", "xfs", "tmpfs", "ramfs" };

static int quiet_type(const char *t, size_t len)
{
	for (size_t i = 0; i < sizeof quiet / sizeof *quiet; i++)
		if (strlen(quiet[i]) == len && !memcmp(quiet[i], t, len))
			return 1;
	return 0;
}

int quietfs_mount(int procfd, pid_t self, unsigned long long mnt_id)
{
	struct sbuf b = { 0 };
	ssize_t n = procfs_read(procfd, self, "mountinfo", &b);
	int found = 0;
	if (n > 0)
		b.p[n] = 0;
	/* a line: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - TYPE SOURCE OPTIONS (a
	 * space in a path shown as \040: " - " only ends the tags) */
	for (const char *l = n > 0 ? b.p : ""; *l && !found;) {
		const char *end = strchr(l, '\n');
		if (!end)
			end = l + strlen(l);
		char *after;
		const char *sep = strtoull(l, &after, 10) == mnt_id && after != l ? memmem(l, (size_t)(end - l), " - ", 3)
										 : NULL;
		if (sep) {
			const char *t = sep + 3, *te = t;
			while (te < end && *te != ' ')
				te++;
			found = 1 + quiet_type(t, (size_t)(te - t));
		}
		l = *end ? end + 1 : end;
	}
	sbuf_free(&b);
	return found == 2;
}
