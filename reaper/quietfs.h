/* SPDX-License-Identifier: MIT */
/* quietfs: the files whose close by us is quiet. A copy of another process's descriptor
 * (pidfd_getfd) must be closed again, and a close calls the file system's flush method every
 * time (FUSE sends a FLUSH to its server, NFS writes back and asks the server): only the
 * files of a file system without one, on a local disk or in memory, are copied. What those
 * are is read from procfs (fdinfo, mountinfo), which asks nothing of the file system. */
#ifndef REAPER_QUIETFS_H
#define REAPER_QUIETFS_H

#include <sys/types.h>

/* The mount (its id) and the inode of pid's descriptor fd, as its fdinfo says: 0, or -errno. */
int quietfs_where(int procfd, pid_t pid, int fd, unsigned long long *mnt_id, unsigned long *ino);
/* Whether the mount of id mnt_id, as self's mountinfo lists it, is of a file system whose
 * files have no flush method (ext2/3/4, xfs, tmpfs, ramfs): 1, or 0 (not listed there: of
 * another mount namespace, or detached). */
int quietfs_mount(int procfd, pid_t self, unsigned long long mnt_id);

#endif
