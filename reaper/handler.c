/* SPDX-License-Identifier: MIT */
/* A signal handler kept for the process that installed it: in a process forked from it, the
 * signal ends the process at once, as at its default action, instead of running the inherited
 * handler (an interpreter's runs only once its code runs again, which a child blocked in a
 * wait never does). No work at fork: the handler itself tells which process it runs in. */
#define _GNU_SOURCE
#include "reaper.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction kept[NSIG]; /* the handler each signal had when it was kept */
static volatile pid_t keeper[NSIG]; /* the process it is kept for */

static void kept_handler(int sig, siginfo_t *info, void *ctx)
{
	int saved = errno;
	if (getpid() == keeper[sig]) {
		if (kept[sig].sa_flags & SA_SIGINFO)
			kept[sig].sa_sigaction(sig, info, ctx);
		else
			kept[sig].sa_handler(sig);
	} else {
		/* a forked process: the default action, once this handler returns and the signal
		 * (blocked while it runs) is delivered again */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
		raise(sig);
	}
	errno = saved;
}

int reaper_keep_handler(int sig)
{
	struct sigaction now, mine;
	int r = 0;
	if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP)
		return -EINVAL;
	pthread_mutex_lock(&keep_lock);
	if (sigaction(sig, NULL, &now) < 0)
		r = -errno;
	else if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == kept_handler)
		keeper[sig] = getpid(); /* kept already: for this process now */
	else if (!(now.sa_flags & SA_SIGINFO) && (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN))
		r = -EINVAL; /* no handler to keep */
	else {
		kept[sig] = now;
		keeper[sig] = getpid();
		mine = now;
		mine.sa_flags |= SA_SIGINFO;
		mine.sa_sigaction = kept_handler;
		if (sigaction(sig, &mine, NULL) < 0)
			r = -errno;
	}
	pthread_mutex_unlock(&keep_lock);
	return r;
}
