/* SPDX-License-Identifier: MIT */
/* adoption: PR_SET_CHILD_SUBREAPER, refcounted, and the host's own setting put back by the
 * last release. With handler.c's kept handlers, the only global state of libreaper. */
#define _GNU_SOURCE
#include "reaper.h"

#include <errno.h>
#include <pthread.h>
#include <sys/prctl.h>

static pthread_mutex_t adopt_lock = PTHREAD_MUTEX_INITIALIZER;
static int adopters;
static int host_subreaper; /* the setting before the first adopt: the last release restores it */

int reaper_adopt(void)
{
	int r, was = 0;
	pthread_mutex_lock(&adopt_lock);
	if (adopters == 0 && prctl(PR_GET_CHILD_SUBREAPER, (unsigned long)&was, 0, 0, 0) < 0)
		r = -errno;
	else if (adopters == 0 && !was && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		r = -errno;
	else {
		if (adopters == 0)
			host_subreaper = was != 0;
		r = ++adopters;
	}
	pthread_mutex_unlock(&adopt_lock);
	return r;
}

int reaper_release(void)
{
	int r;
	pthread_mutex_lock(&adopt_lock);
	if (adopters == 0)
		r = -EINVAL;
	else if (adopters == 1 && !host_subreaper && prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) < 0)
		r = -errno;
	else
		r = --adopters;
	pthread_mutex_unlock(&adopt_lock);
	return r;
}

int reaper_adopted(void)
{
	pthread_mutex_lock(&adopt_lock);
	int r = adopters;
	pthread_mutex_unlock(&adopt_lock);
	return r;
}
