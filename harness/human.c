/* human: see human.h. */
#include "human.h"

#include <string.h>

static int shown(const struct reaper_proc *p)
{
	return p->fate != REAPER_EXITED && p->fate != REAPER_GONE;
}

void human_report(FILE *out, const struct reaper_report *r, const struct reaper_finder *f, size_t nf)
{
	char by[512];
	for (size_t i = 0; i < r->n; i++) {
		const struct reaper_proc *p = &r->procs[i];
		if (!shown(p))
			continue;
		reaper_matched_by(f, nf, p->matched_by, by, sizeof by);
		fprintf(out, "reaper: %s pid %d (%s%s), age %.1f s, state %c\n",
			p->allowed ? "ALLOWED" : p->fate == REAPER_KEPT ? "KEPT" : "LEAK", (int)p->pid,
			reaper_fate_name(p->fate), p->allowed ? ", allowed" : "", p->age, p->state);
		fprintf(out, "  cmdline:  %.300s\n", p->cmdline);
		fprintf(out, "  cwd:      %s\n", p->cwd[0] ? p->cwd : "?");
		fprintf(out, "  found by: %s\n", by);
		if (p->ancestry[0])
			fprintf(out, "  ancestry: %s\n", p->ancestry);
		if (p->test[0])
			fprintf(out, "  test:     %s\n", p->test);
	}
	fprintf(out,
		"reaper: SUMMARY: %zu leaked (%zu terminated, %zu killed, %zu unkillable), %zu exited in time, "
		"%zu kept, %zu allowed, %zu zombies held by live parents%s\n",
		r->leaks, r->terminated, r->killed, r->unkillable, r->exited, r->kept, r->allowed, r->zombies_held,
		r->escalated ? "; SIGKILL was needed" : "");
}
