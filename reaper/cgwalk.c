/* SPDX-License-Identifier: MIT */
/* cgwalk: the one walk of a cgroup subtree (see cgroup.h). Iterative, with a stack of its own:
 * the depth is bounded only by the number of cgroups, and the descriptors held at once by
 * WALK_FDS, however deep the tree (a chain of 10,000 empty cgroups is one directory a level).
 * A cgroup's children are listed whole when it is entered (their names are the walk's only
 * memory); an ancestor whose descriptor was let go is opened again through ".." on the way
 * back up, and checked to be the same directory (a cgroup is only ever renamed within its
 * parent, so ".." stays its parent). */
#define _GNU_SOURCE
#include "cgroup.h"
#include "array.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WALK_FDS 16

struct frame {
	int fd;        /* -1: let go (a deeper level holds one), opened again on the way back */
	dev_t dev;     /* what fd named, to check the one opened again */
	ino_t ino;
	size_t name;   /* this cgroup's name: an offset into its parent's names */
	char *names;   /* its children's names, each NUL-terminated */
	size_t len, cap, next;
};

/* The names of the cgroups directly below dfd into f. */
static int list_children(int dfd, struct frame *f)
{
	int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		int e = errno;
		if (lfd >= 0)
			close(lfd);
		return -e;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (errno = 0, de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		size_t l = strlen(de->d_name) + 1;
		if ((r = ARRAY_RESERVE(f->names, f->cap, f->len + l, 256)) == 0) {
			memcpy(f->names + f->len, de->d_name, l);
			f->len += l;
		}
	}
	/* a cgroup removed while it is read lists what it had, or nothing: not an error */
	if (r == 0 && !de && errno && errno != ENOENT && errno != ENODEV)
		r = -errno;
	closedir(d);
	return r;
}

/* Let the descriptor of f go, keeping what names it. */
static int let_go(struct frame *f)
{
	struct stat sb;
	if (fstat(f->fd, &sb) < 0)
		return -errno;
	f->dev = sb.st_dev;
	f->ino = sb.st_ino;
	close(f->fd);
	f->fd = -1;
	return 0;
}

/* Open parent (whose descriptor was let go) again from its child's descriptor. */
static int reopen_parent(struct frame *parent, int child_fd)
{
	struct stat sb;
	int fd = openat(child_fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0 || sb.st_dev != parent->dev || sb.st_ino != parent->ino) {
		close(fd);
		return -ESTALE;
	}
	parent->fd = fd;
	return 0;
}

/* A child gone since its parent was listed: nothing lives there, nothing is left to do. */
static int vanished(int r)
{
	return r == -ENOENT || r == -ENODEV;
}

int cgroup_walk(const char *path, cgroup_visit_fn enter, cgroup_visit_fn leave, void *ctx)
{
	struct frame *st = NULL;
	size_t depth = 0, cap = 0;
	int r = ARRAY_RESERVE(st, cap, 1, 16);
	if (r < 0)
		return r;
	st[0] = (struct frame){ .fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
	if (st[0].fd < 0) {
		free(st);
		return -errno;
	}
	/* the cgroup at the top of the stack has just been opened: visit it, list it */
	int fresh = 1;
	while (r == 0) {
		struct frame *f = &st[depth];
		if (fresh) {
			fresh = 0;
			r = enter ? enter(ctx, f->fd, NULL) : 0;
			if (r == 0)
				r = list_children(f->fd, f);
			if (depth && vanished(r)) {
				r = 0;
				f->next = f->len; /* nothing below it to visit */
			}
			continue;
		}
		if (f->next < f->len) {
			const char *name = f->names + f->next;
			size_t at = f->next;
			f->next += strlen(name) + 1;
			int cfd = openat(f->fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (cfd < 0) {
				r = errno == ENOENT ? 0 : -errno;
				continue;
			}
			if ((r = ARRAY_RESERVE(st, cap, depth + 2, 16)) < 0) {
				close(cfd);
				break;
			}
			depth++;
			st[depth] = (struct frame){ .fd = cfd, .name = at };
			/* (let go already when a sibling of this one was entered before) */
			if (depth >= WALK_FDS && st[depth - WALK_FDS].fd >= 0)
				r = let_go(&st[depth - WALK_FDS]);
			fresh = 1;
			continue;
		}
		/* f and everything below it visited: back up to its parent, and leave f */
		if (!depth)
			break;
		struct frame *p = &st[depth - 1];
		if (p->fd < 0 && (r = reopen_parent(p, f->fd)) < 0)
			break;
		close(f->fd);
		f->fd = -1;
		free(f->names);
		depth--;
		if (leave) {
			r = leave(ctx, p->fd, p->names + f->name);
			if (vanished(r))
				r = 0;
		}
	}
	for (size_t i = 0; i <= depth; i++) {
		if (st[i].fd >= 0)
			close(st[i].fd);
		free(st[i].names);
	}
	free(st);
	return r;
}
