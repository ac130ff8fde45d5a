/* SPDX-License-Identifier: MIT */
/* holdings: see holdings.h. Sockets are named by matching the socket inodes of
 * /proc/PID/fd against the tables of the process's network namespace (/proc/PID/net/tcp,
 * tcp6, udp, udp6, unix), read once per namespace; a file is the run's output when its
 * device and inode are those of the caller's fd 1 or 2, or it is the caller's terminal, and
 * the run's stdin when they are those of the caller's fd 0. */
#define _GNU_SOURCE
#include "holdings.h"
#include "clock.h"
#include "array.h"

#include "procfs.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MAX_PROCS 1000   /* leaks looked at per reap */
#define HOLD_BUDGET 2.0       /* seconds of gathering per reap */
#define HOLD_MAX_FDS 4096     /* descriptors looked at per leak */
#define HOLD_MAX_ITEMS 32     /* holdings kept per leak; the rest are counted */
#define HOLD_MAX_NETNS 16     /* socket tables cached */
#define HOLD_MAX_DIRS 8

struct sock {
	uint64_t ino;
	enum reaper_hold_kind kind;
	char *what;
};

struct netns {
	uint64_t ino;
	struct sock *v;
	size_t n;
};

struct outfile {
	int ok;
	dev_t dev;
	ino_t ino;
};

struct holdings {
	char *dirs[HOLD_MAX_DIRS];
	size_t ndirs;
	struct outfile out[2]; /* the caller's fd 1 and fd 2 */
	struct outfile in;     /* the caller's fd 0 */
	dev_t tty;             /* the caller's controlling terminal, 0 for none */
	struct netns ns[HOLD_MAX_NETNS];
	size_t nns;
	double deadline;       /* set at the first gathering */
	size_t procs;
	struct sbuf buf;
	long page, ticks;
};

/* The holdings of one leak as they are gathered. */
struct list {
	struct reaper_holding *v;
	size_t n, more;
	int oom;
};

static void add(struct list *l, enum reaper_hold_kind kind, int fd, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add(struct list *l, enum reaper_hold_kind kind, int fd, const char *fmt, ...)
{
	char *what;
	va_list ap;
	va_start(ap, fmt);
	int w = vasprintf(&what, fmt, ap);
	va_end(ap);
	if (w < 0) {
		l->oom = 1;
		return;
	}
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind == kind && !strcmp(l->v[i].what, what)) {
			free(what); /* the same socket or file through another descriptor */
			return;
		}
	if (l->n == HOLD_MAX_ITEMS) {
		l->more++;
		free(what);
		return;
	}
	if (!l->n && !(l->v = calloc(HOLD_MAX_ITEMS, sizeof *l->v))) {
		l->oom = 1;
		free(what);
		return;
	}
	l->v[l->n++] = (struct reaper_holding){ .kind = kind, .fd = fd, .what = what };
}

static void list_free(struct list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].what);
	free(l->v);
	memset(l, 0, sizeof *l);
}

static void add_dir(struct holdings *h, const char *dir)
{
	char *real;
	if (!dir || !*dir || h->ndirs == HOLD_MAX_DIRS || !(real = realpath(dir, NULL)))
		return;
	/* "/" would make every open file a holding */
	int skip = !strcmp(real, "/");
	for (size_t i = 0; !skip && i < h->ndirs; i++)
		skip = !strcmp(h->dirs[i], real);
	if (skip)
		free(real);
	else
		h->dirs[h->ndirs++] = real;
}

static int under_dirs(const struct holdings *h, const char *path)
{
	for (size_t i = 0; i < h->ndirs; i++) {
		size_t n = strlen(h->dirs[i]);
		if (!strncmp(path, h->dirs[i], n) && (path[n] == '/' || !path[n]))
			return 1;
	}
	return 0;
}

/* The controlling terminal's device number (stat field 7). */
static dev_t own_tty(int procfd, struct sbuf *b)
{
	struct reaper_stat st;
	ssize_t n = procfs_read(procfd, getpid(), "stat", b);
	return n > 0 && reaper_parse_stat(b->p, (size_t)n, &st) == 0 ? (dev_t)st.tty_nr : 0;
}

struct holdings *holdings_new(const struct reaper_opts *o)
{
	struct holdings *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	if (o->hold_dirs) {
		for (size_t i = 0; i < o->nhold_dirs; i++)
			add_dir(h, o->hold_dirs[i]);
	} else {
		char *cwd = getcwd(NULL, 0);
		add_dir(h, getenv("HOME"));
		add_dir(h, cwd);
		add_dir(h, "/tmp");
		free(cwd);
	}
	for (int fd = 0; fd <= 2; fd++) {
		struct stat st;
		/* /dev/null and the like hang nothing up; a terminal is matched as the terminal */
		if (fstat(fd, &st) < 0 || S_ISCHR(st.st_mode))
			continue;
		/* a stdin to wait on: a file or a directory gives its reader an end */
		if (!fd && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode))
			continue;
		*(fd ? &h->out[fd - 1] : &h->in) = (struct outfile){ .ok = 1, .dev = st.st_dev, .ino = st.st_ino };
	}
	h->tty = own_tty(-1, &h->buf);
	h->page = sysconf(_SC_PAGESIZE);
	h->ticks = sysconf(_SC_CLK_TCK);
	return h;
}

void holdings_free(struct holdings *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->ndirs; i++)
		free(h->dirs[i]);
	for (size_t i = 0; i < h->nns; i++) {
		for (size_t k = 0; k < h->ns[i].n; k++)
			free(h->ns[i].v[k].what);
		free(h->ns[i].v);
	}
	sbuf_free(&h->buf);
	free(h);
}

void holdings_clear(struct reaper_proc *p)
{
	for (size_t i = 0; i < p->nholdings; i++)
		free(p->holdings[i].what);
	free(p->holdings);
	free(p->holds);
	p->holdings = NULL;
	p->holds = NULL;
	p->nholdings = 0;
	p->holdings_read = 0;
}

/* ---- socket tables ---------------------------------------------------------------- */

static const char *tcp_state(unsigned st)
{
	static const char *const names[] = {
		[1] = "established", [2] = "syn-sent",   [3] = "syn-recv", [4] = "fin-wait1",
		[5] = "fin-wait2",   [6] = "time-wait",  [7] = "closed",   [8] = "close-wait",
		[9] = "last-ack",    [10] = "listening", [11] = "closing", [12] = "new-syn-recv",
	};
	return st < sizeof names / sizeof *names && names[st] ? names[st] : "unknown state";
}

/* "0100007F:1F90" of an IPv4 table, or 32 hex digits of an IPv6 one: each 32-bit word is
 * printed as the kernel holds it in memory, so it is read back as a native integer. */
static int format_addr(const char *hex, unsigned port, int v6, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	unsigned char raw[16];
	size_t words = v6 ? 4 : 1;
	if (strlen(hex) != words * 8)
		return -EINVAL;
	for (size_t i = 0; i < words; i++) {
		char w[9];
		memcpy(w, hex + i * 8, 8);
		w[8] = 0;
		uint32_t v = (uint32_t)strtoul(w, NULL, 16);
		memcpy(raw + i * 4, &v, 4);
	}
	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, raw, ip, sizeof ip))
		return -errno;
	snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", ip, port);
	return 0;
}

static int sock_add(struct netns *ns, size_t *cap, uint64_t ino, enum reaper_hold_kind kind, char *what)
{
	if (!what)
		return -ENOMEM;
	if (ARRAY_RESERVE(ns->v, *cap, ns->n + 1, 64) < 0) {
		free(what);
		return -ENOMEM;
	}
	ns->v[ns->n++] = (struct sock){ .ino = ino, .kind = kind, .what = what };
	return 0;
}

static int inet_table(struct netns *ns, size_t *cap, const char *text, int udp, int v6)
{
	const char *line = strchr(text, '\n'); /* past the header */
	while (line && *++line) {
		char lhex[40], rhex[40], local[64], remote[64], *what = NULL;
		unsigned lport, rport, st;
		unsigned long long ino;
		if (sscanf(line, "%*u: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x %*x:%*x %*x:%*x %*x %*u %*u %llu", lhex,
			   &lport, rhex, &rport, &st, &ino) == 6 &&
		    ino && format_addr(lhex, lport, v6, local, sizeof local) == 0 &&
		    format_addr(rhex, rport, v6, remote, sizeof remote) == 0) {
			enum reaper_hold_kind kind = REAPER_HOLD_CONNECTED;
			int w;
			if (udp && st == 1)
				w = asprintf(&what, "udp %s (connected to %s)", local, remote);
			else if (udp)
				w = asprintf(&what, "udp %s (bound)", local), kind = REAPER_HOLD_LISTENING;
			else if (st == 10)
				w = asprintf(&what, "%s (listening)", local), kind = REAPER_HOLD_LISTENING;
			else
				w = asprintf(&what, "%s (%s, to %s)", local, tcp_state(st), remote);
			if (w < 0 || sock_add(ns, cap, ino, kind, w < 0 ? NULL : what) < 0)
				return -ENOMEM;
		}
		line = strchr(line, '\n');
	}
	return 0;
}

/* Only sockets with a path: the nameless ends of socketpairs and of connections to a
 * daemon are everywhere and name nothing a test could trip over. */
static int unix_row(const char *line, unsigned long *flags, unsigned *type, unsigned *st, unsigned long long *ino,
		    int *off)
{
	const char *end = strchr(line, '\n');
	char *l = strndup(line, end ? (size_t)(end - line) : strlen(line));
	int r = l && sscanf(l, "%*s %*x %*x %lx %x %x %llu %n", flags, type, st, ino, off) == 4;
	free(l);
	return r;
}

static int unix_table(struct netns *ns, size_t *cap, const char *text)
{
	const char *line = strchr(text, '\n');
	while (line && *++line) {
		const char *end = strchr(line, '\n');
		unsigned long f;
		unsigned t, s;
		unsigned long long i;
		int o;
		/* the kernel prints a path as it is, newlines too: a line that is no row goes on
		 * with the path of the row before */
		while (end && end[1] && !unix_row(end + 1, &f, &t, &s, &i, &o))
			end = strchr(end + 1, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		unsigned long flags;
		unsigned type, st;
		unsigned long long ino;
		int off = 0;
		char *l = strndup(line, len), *what = NULL;
		if (!l)
			return -ENOMEM;
		if (sscanf(l, "%*s %*x %*x %lx %x %x %llu %n", &flags, &type, &st, &ino, &off) == 4 && off && l[off]) {
			const char *path = l + off;
			int w, listening = (flags & 0x10000) != 0; /* __SO_ACCEPTCON */
			if (listening)
				w = asprintf(&what, "unix %s (listening)", path);
			else if (st == 3)
				w = asprintf(&what, "unix %s (connected)", path);
			else
				w = asprintf(&what, "unix %s (bound)", path);
			enum reaper_hold_kind kind = st == 3 && !listening ? REAPER_HOLD_CONNECTED : REAPER_HOLD_LISTENING;
			if (w < 0 || sock_add(ns, cap, ino, kind, w < 0 ? NULL : what) < 0) {
				free(l);
				return -ENOMEM;
			}
		}
		free(l);
		line = end;
	}
	return 0;
}

static int by_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct sock *)a)->ino, y = ((const struct sock *)b)->ino;
	return x < y ? -1 : x > y;
}

/* The socket table of pid's network namespace, read now or cached. NULL and *err set
 * when it cannot be had. */
static struct netns *netns_of(struct holdings *h, int procfd, pid_t pid, int *err)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "%d/ns/net", (int)pid);
	if (fstatat(procfd, path, &st, 0) < 0) {
		*err = -errno;
		return NULL;
	}
	for (size_t i = 0; i < h->nns; i++)
		if (h->ns[i].ino == (uint64_t)st.st_ino)
			return &h->ns[i];
	if (h->nns == HOLD_MAX_NETNS) { /* a run of many namespaces: the last slot is reused */
		struct netns *last = &h->ns[--h->nns];
		for (size_t k = 0; k < last->n; k++)
			free(last->v[k].what);
		free(last->v);
	}
	struct netns ns = { .ino = (uint64_t)st.st_ino };
	size_t cap = 0;
	static const struct {
		const char *file;
		int udp, v6, unx;
	} tables[] = { { "tcp", 0, 0, 0 }, { "tcp6", 0, 1, 0 }, { "udp", 1, 0, 0 }, { "udp6", 1, 1, 0 }, { "unix", 0, 0, 1 } };
	int read_any = 0;
	*err = 0;
	for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
		char what[32];
		snprintf(what, sizeof what, "net/%s", tables[t].file);
		ssize_t n = procfs_read(procfd, pid, what, &h->buf);
		if (n < 0) {
			if (n != -ENOENT) /* no IPv6 in this kernel is no error */
				*err = (int)n;
			continue;
		}
		read_any = 1;
		int r = tables[t].unx ? unix_table(&ns, &cap, h->buf.p) : inet_table(&ns, &cap, h->buf.p, tables[t].udp, tables[t].v6);
		if (r < 0) {
			*err = r;
			break;
		}
	}
	if (!read_any || *err == -ENOMEM) {
		for (size_t k = 0; k < ns.n; k++)
			free(ns.v[k].what);
		free(ns.v);
		if (!*err)
			*err = -ENOENT;
		return NULL;
	}
	if (ns.n)
		qsort(ns.v, ns.n, sizeof *ns.v, by_ino);
	h->ns[h->nns] = ns;
	return &h->ns[h->nns++];
}

/* ---- one leak --------------------------------------------------------------------- */

/* RSS, CPU time and start time from /proc/PID/stat (fields 14, 15, 22, 24). */
static int usage_of(struct holdings *h, int procfd, pid_t pid, uint64_t *start, uint64_t *rss, double *cpu)
{
	struct reaper_stat st;
	ssize_t n = procfs_read(procfd, pid, "stat", &h->buf);
	if (n < 0)
		return (int)n;
	if (reaper_parse_stat(h->buf.p, (size_t)n, &st) < 0)
		return -EINVAL;
	*start = st.start_time;
	*rss = st.rss * (uint64_t)(h->page > 0 ? h->page : 4096);
	*cpu = (double)(st.utime + st.stime) / (double)(h->ticks > 0 ? h->ticks : 100);
	return 0;
}

/* A lock of this process on the file: /proc/PID/fdinfo/FD lists them as "lock:" lines. */
static int locked(struct holdings *h, int procfd, pid_t pid, const char *fd)
{
	char what[64];
	snprintf(what, sizeof what, "fdinfo/%s", fd);
	ssize_t n = procfs_read(procfd, pid, what, &h->buf);
	return n > 0 && (!strncmp(h->buf.p, "lock:", 5) || strstr(h->buf.p, "\nlock:"));
}

enum { OUT_STDOUT = 1, OUT_STDERR = 2, OUT_TTY = 4, OUT_STDIN = 8 };

static int is_output(const struct holdings *h, const struct stat *st)
{
	if (S_ISCHR(st->st_mode))
		return h->tty && st->st_rdev == h->tty ? OUT_TTY : 0;
	int m = 0;
	for (int i = 0; i < 2; i++)
		if (h->out[i].ok && h->out[i].dev == st->st_dev && h->out[i].ino == st->st_ino)
			m |= i ? OUT_STDERR : OUT_STDOUT;
	if (h->in.ok && h->in.dev == st->st_dev && h->in.ino == st->st_ino)
		m |= OUT_STDIN;
	return m;
}

/* What the kernel has cached of the open file: asking its file system could block the
 * reap for as long as a FUSE or NFS server does not answer. */
static int cached_stat(int dfd, const char *name, struct stat *st)
{
	struct statx sx;
	memset(st, 0, sizeof *st);
	if (statx(dfd, name, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO | STATX_NLINK, &sx) < 0)
		return -errno;
	st->st_mode = sx.stx_mode;
	st->st_ino = (ino_t)sx.stx_ino;
	st->st_nlink = sx.stx_nlink;
	st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	st->st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
	return 0;
}

static void look_at_fd(struct holdings *h, int procfd, pid_t pid, int dfd, const char *name, struct list *l,
		       int *out, int *out_fd, struct netns **ns, int *ns_err)
{
	char target[PATH_MAX];
	struct stat st;
	int fd = atoi(name);
	ssize_t n = readlinkat(dfd, name, target, sizeof target - 1);
	if (n < 0 || cached_stat(dfd, name, &st) < 0)
		return; /* closed meanwhile */
	target[n] = 0;
	int o = is_output(h, &st);
	for (int bit = 1; bit <= OUT_STDIN; bit <<= 1)
		if ((o & bit) && !(*out & bit))
			out_fd[bit == OUT_STDIN ? 3 : bit == OUT_TTY ? 2 : bit - 1] = fd;
	*out |= o;
	if (o)
		return; /* named as the run's output, not again as a file under /tmp */
	if (S_ISSOCK(st.st_mode)) {
		if (!*ns && !*ns_err)
			*ns = netns_of(h, procfd, pid, ns_err);
		if (!*ns)
			return;
		struct sock key = { .ino = (uint64_t)st.st_ino };
		struct sock *s = bsearch(&key, (*ns)->v, (*ns)->n, sizeof key, by_ino);
		if (s)
			add(l, s->kind, fd, "%s", s->what);
		return;
	}
	if (target[0] != '/' || !strncmp(target, "/memfd:", 7))
		return;
	if (S_ISREG(st.st_mode) && st.st_nlink == 0) {
		static const char suffix[] = " (deleted)";
		size_t sl = sizeof suffix - 1;
		if ((size_t)n > sl && !strcmp(target + n - sl, suffix))
			target[n - sl] = 0;
		add(l, REAPER_HOLD_DELETED, fd, "%s (deleted)%s", target,
		    locked(h, procfd, pid, name) ? " (locked)" : "");
	} else if (under_dirs(h, target)) {
		add(l, REAPER_HOLD_FILE, fd, "%s%s", target, locked(h, procfd, pid, name) ? " (locked)" : "");
	}
}

static void look_at_fds(struct holdings *h, int procfd, pid_t pid, struct list *l)
{
	char path[32];
	snprintf(path, sizeof path, "%d/fd", (int)pid);
	int dfd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		add(l, REAPER_HOLD_UNREADABLE, -1, "open files: %s", strerror(e));
		return;
	}
	struct dirent *de;
	struct netns *ns = NULL;
	int ns_err = 0, out = 0, out_fd[4] = { -1, -1, -1, -1 };
	size_t seen = 0, skipped = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (seen++ >= HOLD_MAX_FDS) {
			skipped++;
			continue;
		}
		look_at_fd(h, procfd, pid, dirfd(d), de->d_name, l, &out, out_fd, &ns, &ns_err);
	}
	closedir(d);
	if (ns_err)
		add(l, REAPER_HOLD_UNREADABLE, -1, "sockets: %s", strerror(-ns_err));
	if (skipped)
		add(l, REAPER_HOLD_UNREADABLE, -1, "%zu more descriptors not looked at", skipped);
	if (out & OUT_TTY)
		add(l, REAPER_HOLD_OUTPUT, out_fd[2], "the run's terminal");
	if (out & OUT_STDIN)
		add(l, REAPER_HOLD_INPUT, out_fd[3], "the run's stdin");
	if ((out & OUT_STDOUT) && (out & OUT_STDERR) && h->out[0].dev == h->out[1].dev && h->out[0].ino == h->out[1].ino)
		add(l, REAPER_HOLD_OUTPUT, out_fd[0], "the run's stdout and stderr");
	else {
		if (out & OUT_STDOUT)
			add(l, REAPER_HOLD_OUTPUT, out_fd[0], "the run's stdout");
		if (out & OUT_STDERR)
			add(l, REAPER_HOLD_OUTPUT, out_fd[1], "the run's stderr");
	}
}

/* The kinds in a fixed order (sockets first: the port is what the next test trips over). */
static int kind_rank(enum reaper_hold_kind k)
{
	static const int rank[] = { [REAPER_HOLD_LISTENING] = 0, [REAPER_HOLD_CONNECTED] = 1, [REAPER_HOLD_OUTPUT] = 2,
				    [REAPER_HOLD_INPUT] = 3,     [REAPER_HOLD_FILE] = 4,      [REAPER_HOLD_DELETED] = 5,
				    [REAPER_HOLD_UNREADABLE] = 6 };
	return (unsigned)k < sizeof rank / sizeof *rank ? rank[k] : 7;
}

static int by_kind(const void *a, const void *b)
{
	const struct reaper_holding *x = a, *y = b;
	int d = kind_rank(x->kind) - kind_rank(y->kind);
	return d ? d : x->fd - y->fd;
}

static char *summary(const struct list *l)
{
	size_t len = 1;
	for (size_t i = 0; i < l->n; i++)
		len += strlen(l->v[i].what) + 2;
	len += 32;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	*p = 0;
	for (size_t i = 0; i < l->n; i++)
		p += sprintf(p, "%s%s", i ? ", " : "", l->v[i].what);
	if (l->more)
		sprintf(p, "%sand %zu more", l->n ? ", " : "", l->more);
	return s;
}

void holdings_gather(struct holdings *h, int procfd, struct reaper_proc *p)
{
	if (!h || p->holdings_read)
		return;
	struct list l = { 0 };
	double t = monotonic_now();
	if (!h->procs)
		h->deadline = t + HOLD_BUDGET;
	uint64_t start = 0;
	if (h->procs >= HOLD_MAX_PROCS || t > h->deadline) {
		add(&l, REAPER_HOLD_UNREADABLE, -1, "not looked at: the reap's bound on gathering holdings was reached");
	} else {
		h->procs++;
		int r = usage_of(h, procfd, p->pid, &start, &p->rss, &p->cpu_time);
		if (r < 0 || start != p->start_time) {
			add(&l, REAPER_HOLD_UNREADABLE, -1, "not looked at: %s", r < 0 ? strerror(-r) : "its pid changed hands");
		} else {
			look_at_fds(h, procfd, p->pid, &l);
			/* what was read belongs to this process only while it still holds the pid */
			uint64_t rss;
			double cpu;
			if (usage_of(h, procfd, p->pid, &start, &rss, &cpu) < 0 || start != p->start_time) {
				list_free(&l);
				add(&l, REAPER_HOLD_UNREADABLE, -1, "not looked at: it exited meanwhile");
			}
		}
	}
	if (l.n)
		qsort(l.v, l.n, sizeof *l.v, by_kind);
	char *s = l.oom ? NULL : summary(&l);
	if (!s) {
		list_free(&l);
		return;
	}
	p->holdings = l.v;
	p->nholdings = l.n;
	p->holds = s;
	p->holdings_read = 1;
}
