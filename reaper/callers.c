/* SPDX-License-Identifier: MIT */
/* callers: see callers.h. */
#define _GNU_SOURCE
#include "callers.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
/* the memory devices' major number (linux/major.h): /dev/null, zero, full, random, urandom */
#define MEM_MAJOR 1

void callers_init(struct callers *cl, struct reader *rd, const struct reaper_opts *o)
{
	memset(cl, 0, sizeof *cl);
	cl->exclude = o->exclude;
	cl->nexclude = o->exclude ? o->nexclude : 0;
	cl->exclude_pgrp = o->exclude_pgrp;
	cl->outside_session = o->outside_session;
	for (int fd = 0; fd <= 2; fd++)
		cl->kin_hint[fd] = -1;
}

/* The pipes on our fd 0-2, read at the first candidate's question: a reap that finds
 * nothing never needs them, and they do not change while it runs. Their count. */
static size_t own_pipes(struct callers *cl)
{
	if (cl->pipes_read)
		return cl->npipes;
	cl->pipes_read = 1;
	for (int fd = 0; fd <= 2; fd++) {
		struct stat sb;
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fstat(fd, &sb) < 0 || !S_ISFIFO(sb.st_mode))
			continue;
		/* (a named FIFO's link is its path, an anonymous pipe's pipe:[INO]) */
		char path[32], link[8];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, link, sizeof link);
		int named = n > 0 && (n < 6 || memcmp(link, "pipe:[", 6) != 0);
		size_t i = 0;
		struct statx sx;
		unsigned long long mnt_id = named && statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &sx) == 0 &&
						    (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0;
		while (i < cl->npipes && (cl->pipes[i].ino != (unsigned long)sb.st_ino || cl->pipes[i].named != named ||
					  cl->pipes[i].mnt_id != mnt_id))
			i++;
		cl->pipes[i].ino = (unsigned long)sb.st_ino;
		cl->pipes[i].acc = fl & O_ACCMODE;
		cl->pipes[i].named = named;
		cl->pipes[i].mnt_id = mnt_id;
		cl->npipes += i == cl->npipes;
	}
	return cl->npipes;
}

void callers_pass_done(struct callers *cl)
{
	for (size_t i = 0; i < cl->nseen; i++)
		close(cl->seen[i].fd);
	cl->nseen = 0;
	cl->no_copy = 0;
	cl->dev_mnt_read = 0;
	cl->dev_mnt = 0;
	cl->pl_rereads = 0;
	cl->nkin = 0;
	cl->kin_read = 0;
	memset(cl->kin_misses, 0, sizeof cl->kin_misses);
	for (int fd = 0; fd <= 2; fd++)
		cl->kin_hint[fd] = -1;
}

void callers_free(struct callers *cl)
{
	callers_pass_done(cl);
	free(cl->pl_seen);
	cl->pl_seen = NULL;
	cl->npl_seen = 0;
	cl->pl_pass = 0;
	cl->anc_pass = 0;
}

/* The access mode (O_RDONLY, O_WRONLY, O_RDWR) of pid's descriptor fd, -1 when unreadable. */
static int fd_access(const struct reader *rd, pid_t pid, int fd)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "%d/fdinfo/%d", (int)pid, fd);
	int f = openat(rd->procfd, path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	ssize_t n = read(f, buf, sizeof buf - 1);
	close(f);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *flags = strstr(buf, "flags:");
	return flags ? (int)(strtoul(flags + 6, NULL, 8) & O_ACCMODE) : -1;
}

/* What a link of /proc names: a pipe (its inode in *ino), a socket, a file under /dev (where
 * terminals and /dev/null are), or anything else; its text (cut short) in link. */
enum { LINK_NONE, LINK_PIPE, LINK_SOCKET, LINK_DEV, LINK_OTHER };

static int link_text(int dirfd, const char *path, unsigned long *ino, char link[64])
{
	*ino = 0;
	link[0] = 0;
	ssize_t n = readlinkat(dirfd, path, link, 63);
	if (n <= 0)
		return LINK_NONE;
	link[n] = 0;
	if (n > 6 && !strncmp(link, "pipe:[", 6)) {
		*ino = strtoul(link + 6, NULL, 10);
		return LINK_PIPE;
	}
	if (n > 8 && !strncmp(link, "socket:[", 8))
		return LINK_SOCKET;
	return n > 5 && !strncmp(link, "/dev/", 5) ? LINK_DEV : LINK_OTHER;
}

static int link_kind(int dirfd, const char *path, unsigned long *ino)
{
	char link[64];
	return link_text(dirfd, path, ino, link);
}

/* The pipe (its inode) on pid's descriptor fd, 0 when it holds none there. */
static unsigned long fd_pipe(const struct reader *rd, pid_t pid, int fd)
{
	char path[64];
	unsigned long ino;
	snprintf(path, sizeof path, "%d/fd/%d", (int)pid, fd);
	return link_kind(rd->procfd, path, &ino) == LINK_PIPE ? ino : 0;
}

/* The pipes on one process's fd 0, 1 and 2, each read at its first question. */
struct fdpipes {
	pid_t pid;
	int pidfd; /* -1: none held */
	unsigned read; /* bit fd: ino[fd] was read */
	unsigned long ino[3];
	int acc[3]; /* the access mode of its end, -2 until known */
};

/* What fp's fd is, told by the caller's own descriptor it likely shares: the same open file as
 * one that is no pipe is no pipe. 1 when told, 0 when its link must be read (the entry stays:
 * the next process may share it). Only the caller's own descriptors are compared with: an
 * ancestor's may be changed by it during the pass (a pipe put there, the caller's pipeline's
 * among them) or be a stranger's once its pid is given out again, and the same file as that
 * is no proof of anything; ours are looked at again after the compare, by a stat of our own. */
static int by_kin(struct callers *cl, struct fdpipes *fp, int fd)
{
	int k = cl->kin_hint[fd];
	long r = syscall(SYS_kcmp, cl->kin[k].pid, fp->pid, KCMP_FILE, cl->kin[k].fd, fd);
	struct stat sb;
	if (r == 0 && fstat(cl->kin[k].fd, &sb) == 0 && !S_ISFIFO(sb.st_mode)) {
		fp->ino[fd] = 0;
		cl->kin_misses[fd] = 0;
		return 1;
	}
	cl->kin_misses[fd]++;
	cl->by_link |= r < 0 && errno == ENOSYS;
	if (r < 0 && errno == EPERM)
		cl->kin[k].pid = 0; /* (ptrace rules refuse compares with this one: links are read) */
	return 0;
}

/* What fp's fd is, told by the copies this pass holds: the same file as a copy, one compare
 * and no path to resolve. 1 when told (ino and acc set), 0 when its link must be read. */
static int by_copy(struct callers *cl, const struct reader *rd, struct fdpipes *fp, int fd)
{
	if (cl->by_link)
		return 0;
	if (cl->kin_hint[fd] >= 0)
		return by_kin(cl, fp, fd);
	/* (this fd of the process looked at before was not copied: most likely this one will not
	 * be either, and its link is read straight away) */
	if (cl->seen_hint[fd] < 0)
		return 0;
	size_t n = cl->nseen, h = (size_t)cl->seen_hint[fd];
	for (size_t k = 0; k < n; k++) {
		size_t i = k == 0 ? (h < n ? h : 0) : (k <= h && h < n ? k - 1 : k);
		long r = syscall(SYS_kcmp, rd->self, fp->pid, KCMP_FILE, cl->seen[i].fd, fd);
		if (r == 0) {
			fp->ino[fd] = cl->seen[i].ino;
			fp->acc[fd] = cl->seen[i].acc;
			cl->seen_hint[fd] = (int)i;
			return 1;
		}
		if (r < 0 && errno == EBADF) {
			fp->ino[fd] = 0; /* nothing open there */
			return 1;
		}
		if (r < 0) {
			cl->by_link |= errno == ENOSYS;
			return 0;
		}
	}
	return 0;
}

/* A character device (a terminal, /dev/null) at path: told without asking its file system
 * (a hung FUSE or NFS server would hold a question that goes to it). 1, with its mount in
 * *mnt_id (0: not told), or 0 with *rdev untouched. */
static int char_dev(int dirfd, const char *path, int flags, dev_t *rdev, unsigned long long *mnt_id)
{
	struct statx sx;
	if (statx(dirfd, path, flags | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO | STATX_MNT_ID, &sx) < 0 ||
	    !S_ISCHR(sx.stx_mode))
		return 0;
	*rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
	*mnt_id = sx.stx_mask & STATX_MNT_ID ? sx.stx_mnt_id : 0;
	return 1;
}

/* The mount of our own /dev/null, read once a pass (0: not told). A memory device is copied
 * only from there: a copy of one on another /dev (a container's, which its teardown unmounts
 * once its processes are gone) would keep that mount busy if it outlived them. */
static unsigned long long own_dev_mount(struct callers *cl)
{
	dev_t rdev;
	if (!cl->dev_mnt_read) {
		cl->dev_mnt_read = 1;
		char_dev(AT_FDCWD, "/dev/null", 0, &rdev, &cl->dev_mnt);
	}
	return cl->dev_mnt;
}

/* A copy of fp's fd, whose link said kind (ino): kept to tell the processes that share it.
 * Only a pipe or a memory device of our own /dev (/dev/null, /dev/zero, /dev/urandom: see
 * own_dev_mount) is copied: the close of a copy may be the file's last (every other holder
 * gone during the pass), and only for these does a last close, come late, neither wait nor
 * fail another program: a file's close may flush it (a hung FUSE or NFS server would hold it),
 * and a file kept past its holders' exit, on any file system, keeps its mount busy (a
 * teardown's umount fails), its write access (an exec of it fails) and its flock; a socket's
 * may linger over unsent data, a terminal's drains its output, a CUSE device's goes to its
 * server. */
static void take_copy(struct callers *cl, const struct reader *rd, struct fdpipes *fp, int fd, int kind,
		      unsigned long ino)
{
	char path[64];
	dev_t dev = 0, own_dev = 0;
	unsigned long long mnt = 0, own_mnt = 0;
	if ((kind != LINK_PIPE && kind != LINK_DEV) || cl->by_link || cl->no_copy || fp->pidfd < 0 ||
	    cl->nseen == sizeof cl->seen / sizeof *cl->seen)
		return;
	snprintf(path, sizeof path, "%d/fd/%d", (int)fp->pid, fd);
	if (kind == LINK_DEV && (!char_dev(rd->procfd, path, 0, &dev, &mnt) || major(dev) != MEM_MAJOR || !mnt ||
				 mnt != own_dev_mount(cl)))
		return;
	int f = (int)syscall(SYS_pidfd_getfd, fp->pidfd, fd, 0);
	if (f < 0) {
		cl->by_link |= errno == ENOSYS;
		cl->no_copy |= errno != ESRCH && errno != EBADF; /* refused: no more tries this pass */
		return;
	}
	/* the copy is what was looked at (not a file dup'd there since): its own link or type says so */
	unsigned long own;
	int fl = fcntl(f, F_GETFL);
	snprintf(path, sizeof path, "/proc/self/fd/%d", f);
	int same = kind == LINK_DEV ? char_dev(f, "", AT_EMPTY_PATH, &own_dev, &own_mnt) && own_dev == dev && own_mnt == mnt
				      : link_kind(AT_FDCWD, path, &own) == kind && own == ino;
	if (fl < 0 || !same) {
		close(f);
		return;
	}
	size_t n = cl->nseen++;
	cl->seen[n].fd = f;
	cl->seen[n].ino = ino;
	cl->seen[n].acc = fl & O_ACCMODE;
	cl->seen_hint[fd] = (int)n;
	fp->acc[fd] = cl->seen[n].acc;
}

#define KIN_MISSES 8

/* The caller's own files on fd 0-2 but pipes, read once a pass at the first need. */
static void read_kin(struct callers *cl, struct reader *rd)
{
	cl->kin_read = 1;
	cl->nkin = 0;
	for (int fd = 0; fd <= 2; fd++) {
		char path[64];
		unsigned long ino;
		snprintf(path, sizeof path, "%d/fd/%d", (int)rd->self, fd);
		int kind = link_text(rd->procfd, path, &ino, cl->kin[cl->nkin].link);
		if (kind == LINK_NONE || kind == LINK_PIPE)
			continue;
		cl->kin[cl->nkin].pid = rd->self;
		cl->kin[cl->nkin++].fd = fd;
	}
}

/* The caller's entry that the next process's fd is likely to share, as this
 * one's link (no pipe) names it: the first one of that name after the one that was tried
 * and missed (tried; -1: none), so that of two opens by one name each is tried in turn. */
static void pick_kin(struct callers *cl, struct reader *rd, int fd, const char *link, int tried)
{
	/* (processes that each opened a file by the name the caller holds share none:
	 * after a few misses in a row their links are read at once) */
	if (cl->kin_misses[fd] >= KIN_MISSES)
		return;
	if (!cl->kin_read)
		read_kin(cl, rd);
	size_t n = cl->nkin;
	for (size_t k = 0; k < n; k++) {
		size_t i = (size_t)(tried + 1) + k < n ? (size_t)(tried + 1) + k : (size_t)(tried + 1) + k - n;
		if (cl->kin[i].pid && !strcmp(cl->kin[i].link, link)) {
			cl->kin_hint[fd] = (int)i;
			return;
		}
	}
}

static unsigned long pipe_on(struct callers *cl, struct reader *rd, struct fdpipes *fp, int fd)
{
	if (!(fp->read & (1u << fd))) {
		if (!by_copy(cl, rd, fp, fd)) {
			char path[64], link[64];
			snprintf(path, sizeof path, "%d/fd/%d", (int)fp->pid, fd);
			int kind = link_text(rd->procfd, path, &fp->ino[fd], link);
			/* what is not copied now (a socket, a terminal, a file, no room or no
			 * pidfd) most likely is not at this fd of the next process either: its link is
			 * read at once there, with no compares that cannot match, unless the
			 * caller holds a file by that name */
			cl->seen_hint[fd] = -1;
			int tried = cl->kin_hint[fd];
			cl->kin_hint[fd] = -1;
			take_copy(cl, rd, fp, fd, kind, fp->ino[fd]);
			if (kind != LINK_NONE && kind != LINK_PIPE && cl->seen_hint[fd] < 0)
				pick_kin(cl, rd, fd, link, tried);
		}
		fp->read |= 1u << fd;
	}
	return fp->ino[fd];
}

/* The other end of a pipe on the caller's fd 0, 1 or 2 is the caller's pipeline: the reader
 * of its output (`| tee`, and what that reader started with it), the writer of its input. A
 * process that holds the same end as the caller (a daemon left writing to the same output)
 * is not. A pipeline member holds the pipe where a pipeline puts it: a reader on its fd 0, a
 * writer on its fd 1 or 2; only those are looked at (one read per process when only the
 * caller's output is a pipe). */
/* A named FIFO of the caller's (`reaper scan >fifo`, read by `cat <fifo`) on fp's fd, at the
 * other end: its link names a path, not a pipe. Told by its fdinfo (mount, inode and access
 * mode), which asks nothing of its file system: a stat through the link would end its path walk
 * with a revalidation (NFS's d_weak_revalidate asks the server). */
static int named_partner(struct callers *cl, struct reader *rd, struct fdpipes *fp, int fd)
{
	char what[32];
	struct sbuf b = { 0 };
	snprintf(what, sizeof what, "fdinfo/%d", fd);
	const char *text = procfs_read(rd->procfd, fp->pid, what, &b) > 0 ? b.p : "";
	const char *flags = strstr(text, "flags:"), *mnt = strstr(text, "mnt_id:"), *ino = strstr(text, "\nino:");
	int found = 0;
	if (flags && mnt && ino) {
		int acc = (int)(strtoul(flags + 6, NULL, 8) & O_ACCMODE);
		unsigned long long mnt_id = strtoull(mnt + 7, NULL, 10);
		unsigned long inode = strtoul(ino + 5, NULL, 10);
		for (size_t i = 0; i < cl->npipes && !found; i++)
			found = cl->pipes[i].named && cl->pipes[i].mnt_id && cl->pipes[i].mnt_id == mnt_id &&
				cl->pipes[i].ino == inode && acc != cl->pipes[i].acc;
	}
	sbuf_free(&b);
	return found;
}

static int pipeline_partner(struct callers *cl, struct reader *rd, struct fdpipes *fp)
{
	int named = 0;
	int readers = 0, writers = 0;
	for (size_t i = 0; i < cl->npipes; i++) {
		readers |= cl->pipes[i].acc != O_RDONLY; /* the caller writes: look for its reader */
		writers |= cl->pipes[i].acc != O_WRONLY;
		named |= cl->pipes[i].named;
	}
	for (int fd = readers ? 0 : 1; fd <= (writers ? 2 : 0); fd++) {
		unsigned long ino = pipe_on(cl, rd, fp, fd);
		if (!ino && named && named_partner(cl, rd, fp, fd))
			return 1;
		if (!ino)
			continue;
		for (size_t i = 0; i < cl->npipes; i++) {
			if (cl->pipes[i].named || cl->pipes[i].ino != ino)
				continue;
			int acc = fp->acc[fd] != -2 ? fp->acc[fd] : fd_access(rd, fp->pid, fd);
			if (acc >= 0 && acc != cl->pipes[i].acc)
				return 1;
		}
	}
	return 0;
}

/* A caller started in a session of its own (`setsid reaper ...`) has its shell, the shell's
 * other jobs and its pipeline in its parent's: the sessions of its ancestors are the caller's
 * too, init's among them when the shell never made one of its own (a CI runner's steps often
 * share it; its id reads 0 when its leader is outside the pid namespace or is the kernel's
 * first process), and init's when init is the shell. Read when the first candidate is judged
 * (a clean run judges none). */
static void read_sessions(struct callers *cl, struct reader *rd)
{
	cl->sessions[0] = getsid(0);
	cl->nsessions = 1;
	for (pid_t p = rd->self; p > 0;) {
		struct reaper_stat st;
		if (procfs_stat(rd->procfd, p, &st) < 0)
			break;
		size_t i = 0;
		while (i < cl->nsessions && cl->sessions[i] != st.session)
			i++;
		if (i == cl->nsessions && st.session >= 0 && cl->nsessions < 8)
			cl->sessions[cl->nsessions++] = st.session;
		p = st.ppid;
	}
}

static int caller_session(struct callers *cl, struct reader *rd, pid_t sid)
{
	if (!cl->nsessions)
		read_sessions(cl, rd);
	for (size_t i = 0; i < cl->nsessions; i++)
		if (sid == cl->sessions[i])
			return 1;
	return 0;
}

/* The pipes the caller's ancestors hold on fd 0-2, read once per pass (at its first need). */
static void ancestors_pipes(struct callers *cl, struct reader *rd, unsigned pass)
{
	if (cl->anc_pass == pass + 1)
		return;
	cl->anc_pass = pass + 1;
	cl->nanc_pipes = 0;
	size_t nanc;
	const pid_t *anc = reader_callers(rd, &nanc);
	for (size_t a = 1; a < nanc; a++)
		for (int fd = 0; fd <= 2; fd++) {
			unsigned long ino = fd_pipe(rd, anc[a], fd);
			size_t i = 0;
			while (i < cl->nanc_pipes && cl->anc_pipes[i] != ino)
				i++;
			if (ino && i == cl->nanc_pipes && i < sizeof cl->anc_pipes / sizeof *cl->anc_pipes)
				cl->anc_pipes[cl->nanc_pipes++] = ino;
		}
}

/* A pipe the caller or one of its ancestors holds links nothing: what the run left holds it
 * too (inherited), at the same end as the caller. */
static int callers_pipe(struct callers *cl, struct reader *rd, unsigned pass, unsigned long ino)
{
	for (size_t i = 0; i < own_pipes(cl); i++)
		if (!cl->pipes[i].named && cl->pipes[i].ino == ino)
			return 1;
	ancestors_pipes(cl, rd, pass);
	for (size_t i = 0; i < cl->nanc_pipes; i++)
		if (cl->anc_pipes[i] == ino)
			return 1;
	return 0;
}

/* A process of the caller's sessions with a pipe on fd 0, 1 or 2: the pipes and its ends. */
struct pl_proc {
	pid_t pid;
	uint64_t start_time;
	unsigned long ino[3];
	int acc[3];
	int member;
};

/* The processes of the caller's sessions that hold a pipe on fd 0-2, but for the caller and
 * its ancestors, each marked when it is a partner; *n gets how many. NULL when none (or out of
 * memory: what was listed until then). */
static struct pl_proc *session_pipes(struct callers *cl, struct reader *rd, size_t *n)
{
	size_t nanc, cap = 0;
	const pid_t *anc = reader_callers(rd, &nanc);
	struct pl_proc *v = NULL;
	*n = 0;
	int dfd = openat(rd->procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	char dents[4096] __attribute__((aligned(8)));
	ssize_t nd;
	while ((nd = getdents64(dfd, (void *)dents, sizeof dents)) > 0)
		for (ssize_t off = 0; off < nd;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(dents + off);
			off += d->d_reclen;
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			pid_t pid = atoi(d->d_name);
			struct reaper_stat st;
			if (pid == rd->self || procfs_stat(rd->procfd, pid, &st) < 0 || !caller_session(cl, rd, st.session))
				continue;
			struct pl_proc p = { .pid = pid, .start_time = st.start_time };
			int any = 0;
			for (int fd = 0; fd <= 2; fd++) {
				if (!(p.ino[fd] = fd_pipe(rd, pid, fd)))
					continue;
				p.acc[fd] = fd_access(rd, pid, fd);
				any = 1;
			}
			if (!any || pid_in_list(anc, nanc, pid))
				continue;
			if (*n == cap) {
				struct pl_proc *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof *v);
				if (!nv)
					goto out;
				v = nv;
			}
			struct fdpipes fp = { .pid = pid, .pidfd = -1, .read = 7, .ino = { p.ino[0], p.ino[1], p.ino[2] },
					      .acc = { p.acc[0], p.acc[1], p.acc[2] } };
			p.member = pipeline_partner(cl, rd, &fp);
			v[(*n)++] = p;
		}
out:
	close(dfd);
	return v;
}

/* Whether v[i] holds the other end of a pipe a member holds on fd 0-2 (one the caller's side
 * holds links nothing). */
static int linked_to_member(struct callers *cl, struct reader *rd, unsigned pass, const struct pl_proc *v,
			    size_t n, size_t i)
{
	for (size_t j = 0; j < n; j++) {
		if (!v[j].member)
			continue;
		for (int a = 0; a <= 2; a++)
			for (int b = 0; b <= 2; b++)
				if (v[i].ino[a] && v[i].ino[a] == v[j].ino[b] && v[i].acc[a] >= 0 && v[j].acc[b] >= 0 &&
				    v[i].acc[a] != v[j].acc[b] && !callers_pipe(cl, rd, pass, v[i].ino[a]))
					return 1;
	}
	return 0;
}

/* The pipeline past the caller's partners: a process of the caller's sessions holding the
 * other end of a pipe a member holds on fd 0-2 (tee's output, read by cat) is a member, until
 * no more join. Read once per pass, when a match needs it (pipeline_member reads it again). */
static void pipeline_members(struct callers *cl, struct reader *rd, unsigned pass)
{
	if (cl->pl_pass == pass + 1)
		return;
	cl->pl_pass = pass + 1;
	cl->npl_seen = 0;
	size_t n;
	struct pl_proc *v = session_pipes(cl, rd, &n);
	for (int grew = 1; grew;) {
		grew = 0;
		for (size_t i = 0; i < n; i++)
			if (!v[i].member && linked_to_member(cl, rd, pass, v, n, i))
				v[i].member = grew = 1;
	}
	free(cl->pl_seen);
	cl->pl_seen = n ? malloc(n * sizeof *cl->pl_seen) : NULL;
	for (size_t i = 0; i < n && cl->pl_seen; i++)
		cl->pl_seen[cl->npl_seen++] = (struct pl_seen){ { v[i].pid, v[i].start_time }, v[i].member };
	free(v);
}

/* Whether the process holds a pipe on fd 0-2 that neither the caller nor one of its ancestors
 * holds: only such a process can be a member past the partners (linked_to_member takes no
 * other pipe for a link), and it must be of the caller's sessions too. */
static int holds_other_pipe(struct callers *cl, struct reader *rd, unsigned pass, struct fdpipes *fp)
{
	for (int fd = 0; fd <= 2; fd++) {
		unsigned long ino = pipe_on(cl, rd, fp, fd);
		if (ino && !callers_pipe(cl, rd, pass, ino))
			return 1;
	}
	return 0;
}

/* How many times a pass looks at the caller's sessions again for a process its look missed. */
#define PL_REREADS 4

/* Our own start time, read at its first need (0 when it cannot be read). */
static uint64_t self_start(struct callers *cl, struct reader *rd)
{
	struct reaper_stat st;
	if (!cl->self_start && procfs_stat(rd->procfd, rd->self, &st) == 0)
		cl->self_start = st.start_time;
	return cl->self_start;
}

/* Whether fp's process (of start_time; 0: whichever holds the pid, not read) is a member of
 * the caller's pipeline past its partners. The pass's look at the caller's sessions may have
 * come too early for it: a member is started with the caller (`reaper | tee | cat`: its shell
 * forks them in turn), and one may not have held its pipe yet (between its fork and its
 * dup2), nor the partner it is linked through. So the sessions are looked at again for one
 * that holds another pipe when that look did not see it, or saw it as no member and it is
 * younger than us, a few times a pass at most (what a run left behind is older). */
static int pipeline_member(struct callers *cl, struct reader *rd, unsigned pass, struct fdpipes *fp,
			   uint64_t start_time)
{
	pipeline_members(cl, rd, pass);
	for (int again = 0;; again = 1) {
		int seen = -1;
		for (size_t i = 0; i < cl->npl_seen && seen < 0; i++)
			if (cl->pl_seen[i].id.pid == fp->pid && (!start_time || cl->pl_seen[i].id.start_time == start_time))
				seen = cl->pl_seen[i].member;
		/* younger than us: by its start time, or without it by its pid (given out after
		 * ours, unless the pids came round: then a look too many, or one too few) */
		int younger = start_time ? start_time >= self_start(cl, rd) : fp->pid > rd->self;
		if (seen == 1 || again || cl->pl_rereads >= PL_REREADS || (seen == 0 && !younger) ||
		    !holds_other_pipe(cl, rd, pass, fp))
			return seen == 1;
		cl->pl_rereads++;
		cl->pl_pass = 0;
		pipeline_members(cl, rd, pass);
	}
}

uint32_t callers_filter(struct callers *cl, struct reader *rd, unsigned pass, const struct pidref *ref,
			const struct reaper_stat *st, uint32_t mask)
{
	for (size_t i = 0; i < cl->nexclude; i++)
		if (cl->exclude[i].pid == st->pid && cl->exclude[i].start_time == st->start_time)
			return 0;
	if (cl->exclude_pgrp > 0 && st->pgrp == cl->exclude_pgrp)
		return 0;
	if (caller_session(cl, rd, st->session))
		mask &= ~cl->outside_session;
	/* a partner's descriptors are read after it was pinned: when the pin still holds after
	 * the reads they were its own (when it does not, it is gone and nobody's). Looked for in
	 * every session: reaper or its partner may have made one of its own (`setsid reaper`). */
	struct fdpipes fp = { .pid = st->pid, .pidfd = ref->fd, .acc = { -2, -2, -2 } };
	if (mask && own_pipes(cl) && pipeline_partner(cl, rd, &fp) && pidref_held(ref, rd->procfd) == 0)
		return 0;
	/* once the pass has the members, a look at the list is the whole answer */
	if (mask && cl->npipes && caller_session(cl, rd, st->session) &&
	    (cl->pl_pass == pass + 1 || holds_other_pipe(cl, rd, pass, &fp))) {
		if (pipeline_member(cl, rd, pass, &fp, st->start_time) && pidref_held(ref, rd->procfd) == 0)
			return 0;
	}
	return mask;
}

int callers_filter_unstated(struct callers *cl, struct reader *rd, unsigned pass, const struct pidref *ref,
			    uint32_t *mask)
{
	if (cl->nexclude)
		return -EAGAIN;
	/* the job's process group and the caller's sessions are asked of the kernel by pid, not
	 * read from a stat. An answer that takes a finder away is proven the pinned process's by
	 * its pidfd, still open after; one that leaves the match as it is needs no more proof than
	 * the reads of its pipes below (the listing shows a match that has exited since its pin
	 * as it was then, or judges it the full way) */
	if (*mask && (cl->exclude_pgrp > 0 || cl->outside_session)) {
		pid_t pgrp = cl->exclude_pgrp > 0 ? getpgid(ref->pid) : 0;
		pid_t sid = cl->outside_session ? getsid(ref->pid) : 0;
		if (pgrp < 0 || sid < 0)
			return -EAGAIN;
		uint32_t left = cl->exclude_pgrp > 0 && pgrp == cl->exclude_pgrp ? 0
				: cl->outside_session && caller_session(cl, rd, sid) ? *mask & ~cl->outside_session
										     : *mask;
		if (left != *mask && pidref_held(ref, rd->procfd) < 0)
			return -EAGAIN;
		if (!(*mask = left))
			return 0;
	}
	if (!*mask || !own_pipes(cl))
		return 0;
	struct fdpipes fp = { .pid = ref->pid, .pidfd = ref->fd, .acc = { -2, -2, -2 } };
	if (pipeline_partner(cl, rd, &fp)) {
		if (pidref_held(ref, rd->procfd) < 0)
			return -EAGAIN; /* gone since: told as callers_filter tells it */
		*mask = 0;
		return 0;
	}
	/* a member past the partners is in the caller's sessions and holds another pipe: then its
	 * session is asked (the pidfd, still open after, proves the answer its own) and the
	 * members of the pass are the whole answer; one is told by its start time the full way */
	pid_t sid = -1;
	/* (the session is one cheap call, the pipes up to three reads: while the matches are of
	 * other sessions, as a run's in another terminal or CI step are, it is asked first) */
	if (!cl->sid_later) {
		sid = getsid(ref->pid);
		if (sid >= 0 && !caller_session(cl, rd, sid))
			return 0; /* (no member: proven as an answer from its pipes would be) */
		cl->sid_later = sid >= 0;
	}
	if (cl->pl_pass != pass + 1 && !holds_other_pipe(cl, rd, pass, &fp))
		return 0;
	if (sid < 0)
		sid = getsid(ref->pid);
	if (sid < 0 || pidref_held(ref, rd->procfd) < 0)
		return -EAGAIN;
	cl->sid_later = caller_session(cl, rd, sid);
	if (!cl->sid_later)
		return 0;
	return pipeline_member(cl, rd, pass, &fp, 0) ? -EAGAIN : 0;
}
