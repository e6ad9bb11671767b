/* SPDX-License-Identifier: GPL-2.0-only */
/* report.c -- the step report and its verdict.
 *
 * Until the AutomaDeD/PDI analysis runs on the models, the verdict tells a finished step
 * from a hung one: which tasks ended normally (their last call was MPI_Finalize), which
 * were blocked inside an MPI call and where, and which were computing — a task the others
 * wait for while it computes is the first suspect of a hang. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "json.h"
#include "log.h"
#include "automaded.h"
#include "mpi_funcs.h"
#include "pdi.h"
#include "ranges.h"
#include "report.h"
#include "sites.h"
#include "tracer.h"

#define PDI_CLEAR_MARGIN 1.2 /* a phase or task this much above the next one is reported */
#define PDI_MIN_PHASES 6     /* compared phases below which no phase is singled out */

enum task_kind { TASK_FINISHED, TASK_BLOCKED, TASK_IN_MPI, TASK_COMPUTING, TASK_NO_MPI };

static const char *const kind_names[] = {
	[TASK_FINISHED] = "finished", [TASK_BLOCKED] = "blocked", [TASK_IN_MPI] = "in_mpi",
	[TASK_COMPUTING] = "computing", [TASK_NO_MPI] = "no_mpi"};

struct where {
	enum task_kind kind;
	char text[600];  /* "MPI_Barrier@ring.c:37" or "after MPI_Waitall@ring.c:33" */
	uint64_t for_ns; /* how long it has been there (running tasks) */
	int64_t site;    /* the call it is in or after, -1 when unknown */
	int32_t peers[PDI_NREQS + 1]; /* the ranks a blocked call waits for */
	unsigned npeers;
};

/* Where task T is now, or was when it ended. */
static void locate(struct pdi_daemon *d, struct pdi_task *t, struct where *w)
{
	struct pdi_step *s = t->step;
	struct pdi_inflight f;
	pid_t tid;
	uint32_t site;
	uint64_t now = pdi_now_ns();

	*w = (struct where){.site = -1};
	if (t->state == PDI_TASK_RUNNING && pdi_tracer_inflight(d->tracer, t->pid, &f, &tid, 1) == 1) {
		unsigned fn = PDI_COOKIE_FN(f.cookie);
		/* inside MPI for a moment is what MPI programs do; past the timeout it is a hang
		 * suspect (PDI 4.1) */
		w->for_ns = now > f.t_enter ? now - f.t_enter : 0;
		w->kind = w->for_ns >= (uint64_t)d->cfg.hang_timeout_ms * 1000000 ? TASK_BLOCKED : TASK_IN_MPI;
		w->site = -1;
		if (fn < pdi_mpi_nfuncs && pdi_site_lookup(t, d->objs, f.callsite, (uint16_t)fn, &site) == 0) {
			snprintf(w->text, sizeof(w->text), "%s", s->sites[site].name);
			w->site = site;
		} else {
			snprintf(w->text, sizeof(w->text), "%s", fn < pdi_mpi_nfuncs ? pdi_mpi_funcs[fn].name : "?");
		}
		w->npeers = pdi_task_peers(t, &f, w->peers, ELEMENTSOF(w->peers));
	} else if (t->ended_in) {
		w->kind = TASK_BLOCKED;
		w->site = t->ended_site;
		snprintf(w->text, sizeof(w->text), "%s", t->ended_in);
		memcpy(w->peers, t->ended_peers, sizeof(w->peers));
		w->npeers = t->nended_peers;
	} else if (!t->model.started) {
		w->kind = TASK_NO_MPI;
	} else if (pdi_mpi_funcs[t->model.last_fn].cls == PDI_FC_FINALIZE) {
		w->kind = TASK_FINISHED;
	} else {
		w->kind = TASK_COMPUTING;
		w->site = t->model.last_site;
		snprintf(w->text, sizeof(w->text), "after %s", s->sites[t->model.last_site].name);
		if (t->state == PDI_TASK_RUNNING && now > t->model.last_exit)
			w->for_ns = now - t->model.last_exit;
	}
}

struct group {
	enum task_kind kind;
	const char *text;
	int *ranks;
	size_t n;
};

/* Tasks grouped by where they are; groups sorted smallest first: the odd ones out lead. */
static int group_tasks(const struct pdi_step *s, const struct where *w, struct group **ret, size_t *ret_n)
{
	struct group *g = calloc(s->ntasks ? s->ntasks : 1, sizeof(*g));
	size_t ng = 0;

	if (!g)
		return -ENOMEM;
	for (unsigned i = 0; i < s->ntasks; i++) {
		size_t k = 0;

		while (k < ng && !(g[k].kind == w[i].kind && !strcmp(g[k].text, w[i].text)))
			k++;
		if (k == ng) {
			g[ng] = (struct group){.kind = w[i].kind, .text = w[i].text,
					       .ranks = calloc(s->ntasks, sizeof(int))};
			if (!g[ng++].ranks)
				goto oom;
		}
		g[k].ranks[g[k].n++] = s->tasks[i]->rank;
	}
	for (size_t i = 1; i < ng; i++) /* a handful of groups: insertion sort */
		for (size_t j = i; j > 0 && g[j].n < g[j - 1].n; j--) {
			struct group x = g[j];
			g[j] = g[j - 1];
			g[j - 1] = x;
		}
	*ret = g;
	*ret_n = ng;
	return 0;
oom:
	for (size_t k = 0; k < ng; k++)
		free(g[k].ranks);
	free(g);
	return -ENOMEM;
}

/* PDI on the step's tasks: the least-progressed ranks behind a hang, as "[2]" in LP (""
 * when PDI cannot tell), and the progress dependence graph into J when not NULL. */
static int least_progressed(const struct pdi_step *s, const struct where *w, char *lp, size_t lplen,
			    struct pdi_json *j)
{
	struct pdi_position *pos = calloc(s->ntasks ? s->ntasks : 1, sizeof(*pos));
	struct pdi_mm *mm = calloc(s->ntasks ? s->ntasks : 1, sizeof(*mm));
	int *ranks = calloc(s->ntasks ? s->ntasks : 1, sizeof(*ranks));
	struct pdi_pdg g = {0};
	size_t n = 0, nlp = 0;
	char buf[4096];
	int r = -ENOMEM;

	lp[0] = '\0';
	if (!pos || !mm || !ranks)
		goto out;
	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct pdi_task *t = s->tasks[i];

		if (w[i].site < 0 || w[i].kind == TASK_NO_MPI || t->rank < 0)
			continue; /* nowhere known: no part in the graph */
		if ((r = pdi_mm_build(&t->model, &mm[n])) < 0)
			goto out;
		pos[n] = (struct pdi_position){.rank = t->rank, .state = pdi_state_comm((uint32_t)w[i].site),
					       .inside = w[i].kind == TASK_BLOCKED || w[i].kind == TASK_IN_MPI,
					       .finished = w[i].kind == TASK_FINISHED, .mm = &mm[n],
					       .peers = w[i].peers, .npeers = w[i].npeers};
		n++;
	}
	r = pdi_pdg_build(pos, n, &g);
	if (r < 0)
		goto out;
	for (size_t k = 0; k < g.ngroups; k++)
		for (size_t x = 0; g.groups[k].lp && x < g.groups[k].n; x++)
			ranks[nlp++] = g.groups[k].ranks[x];
	if (nlp)
		pdi_ranges_format(ranks, nlp, lp, lplen);
	if (j) {
		pdi_json_key(j, "pdg");
		pdi_json_obj_begin(j);
		pdi_json_key(j, "groups");
		pdi_json_arr_begin(j);
		for (size_t k = 0; k < g.ngroups; k++) {
			pdi_ranges_format(g.groups[k].ranks, g.groups[k].n, buf, sizeof(buf));
			pdi_json_obj_begin(j);
			pdi_json_kv_str(j, "ranks", buf);
			pdi_json_kv_str(j, "at", s->sites[pdi_state_site(g.groups[k].state)].name);
			pdi_json_kv_bool(j, "inside", g.groups[k].inside);
			pdi_json_kv_bool(j, "point_to_point_dependent", g.groups[k].p2p_dependent);
			pdi_json_kv_bool(j, "least_progressed", g.groups[k].lp);
			pdi_json_obj_end(j);
		}
		pdi_json_arr_end(j);
		/* "waits_for": the first group waits for the second; "undefined": PDI cannot tell */
		pdi_json_key(j, "edges");
		pdi_json_arr_begin(j);
		for (size_t a = 0; a < g.ngroups; a++)
			for (size_t b = 0; b < g.ngroups; b++) {
				uint8_t dep = g.dep[a * g.ngroups + b];

				if (dep != PDI_DEP_ON && !(dep == PDI_DEP_UNDEFINED && a < b))
					continue;
				pdi_json_obj_begin(j);
				pdi_json_kv_uint(j, "from", a);
				pdi_json_kv_uint(j, "to", b);
				pdi_json_kv_str(j, "dependence", dep == PDI_DEP_ON ? "waits_for" : "undefined");
				pdi_json_obj_end(j);
			}
		pdi_json_arr_end(j);
		pdi_json_obj_end(j);
	}
	r = 0;
out:
	pdi_pdg_done(&g);
	for (size_t k = 0; k < n; k++)
		pdi_mm_done(&mm[k]);
	free(mm);
	free(pos);
	free(ranks);
	return r;
}

/* AutomaDeD on the tasks' per-phase models: where behaviour changed most. Adds the
 * "automaded" member to J and, when the contrast is clear, a line to LINE. */
static void automaded(const struct pdi_step *s, struct pdi_json *j, char *line, size_t linelen)
{
	const struct pdi_model **models = calloc(s->ntasks ? s->ntasks : 1, sizeof(*models));
	int *ranks = calloc(s->ntasks ? s->ntasks : 1, sizeof(*ranks));
	struct pdi_automaded a;
	char from[1100], to[1100];
	size_t n = 0;

	line[0] = '\0';
	for (unsigned i = 0; models && ranks && i < s->ntasks; i++)
		if (s->tasks[i]->model.nphases > 0) {
			ranks[n] = s->tasks[i]->rank;
			models[n++] = &s->tasks[i]->model;
		}
	if (!models || !ranks || pdi_automaded_run(&(struct pdi_automaded_input){.models = models, .n = n, .dist = PDI_TIME_GAUSS}, &a, NULL) < 0) {
		free(models);
		free(ranks);
		return; /* fewer than two phases: nothing to compare, and nothing to say */
	}
	pdi_json_key(j, "automaded");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "phases", a.nphases);
	pdi_json_kv_uint(j, "first_phase", a.first_phase);
	pdi_json_key(j, "phase_scores");
	pdi_json_arr_begin(j);
	for (uint32_t p = 0; p < a.nphases; p++)
		pdi_json_double(j, a.phase_score[p]);
	pdi_json_arr_end(j);
	pdi_json_kv_uint(j, "faulty_phase", a.faulty_phase);
	pdi_json_kv_double(j, "phase_margin", a.phase_margin);
	pdi_json_kv_int(j, "faulty_rank", ranks[a.faulty_task]);
	pdi_json_kv_double(j, "task_margin", a.task_margin);
	pdi_json_key(j, "transitions");
	pdi_json_arr_begin(j);
	for (size_t k = 0; k < a.ntop; k++) {
		pdi_state_name(s, a.top[k].from, from, sizeof(from));
		pdi_state_name(s, a.top[k].to, to, sizeof(to));
		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "from", from);
		pdi_json_kv_str(j, "to", to);
		pdi_json_kv_double(j, "score", a.top[k].score);
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
	/* a clear contrast among enough phases only: "nothing abnormal found" is a valid verdict,
	 * and a margin among three phases is chance */
	if (a.phase_margin >= PDI_CLEAR_MARGIN && a.task_margin >= PDI_CLEAR_MARGIN && a.ntop > 0 &&
	    a.nphases - 2 * a.first_phase >= PDI_MIN_PHASES) {
		pdi_state_name(s, a.top[0].from, from, sizeof(from));
		pdi_state_name(s, a.top[0].to, to, sizeof(to));
		snprintf(line, linelen,
			 "pdimon: behaviour changed most in phase %u (%.1fx the next), in rank %d (%.1fx the next), "
			 "at %s => %s\n",
			 a.faulty_phase, a.phase_margin, ranks[a.faulty_task], a.task_margin, from, to);
	}
	pdi_automaded_done(&a);
	free(models);
	free(ranks);
}

static const char *verdict_kind(const struct group *g, size_t ng, const struct pdi_step *s)
{
	bool blocked = false, all_finished = ng > 0;

	for (size_t i = 0; i < ng; i++) {
		blocked |= g[i].kind == TASK_BLOCKED;
		all_finished &= g[i].kind == TASK_FINISHED;
	}
	if (!s->ntasks)
		return "not_monitored";
	if (all_finished)
		return "completed";
	if (blocked)
		return "hang";
	return pdi_step_running(s) ? "running" : "incomplete";
}

static char *summary_text(const struct pdi_step *s, const char *kind, const struct group *g, size_t ng,
			  const char *lp)
{
	struct pdi_json j;
	char ranks[256];

	pdi_json_init(&j);
	if (!strcmp(kind, "not_monitored")) {
		pdi_json_printf(&j, "pdimon: step %s: no MPI task was monitored\n", s->name);
		return pdi_json_steal(&j);
	}
	if (!strcmp(kind, "completed")) {
		uint64_t calls = 0;

		for (unsigned i = 0; i < s->ntasks; i++)
			calls += s->tasks[i]->model.calls;
		pdi_json_printf(&j, "pdimon: step %s: all %u tasks completed (%" PRIu64 " MPI calls); nothing abnormal found\n",
		    s->name, s->ntasks, calls);
		return pdi_json_steal(&j);
	}
	if (!strcmp(kind, "hang"))
		pdi_json_printf(&j, "pdimon: step %s: tasks %s blocked in MPI%s — %u tasks:\n", s->name,
				pdi_step_running(s) ? "are" : "were", pdi_step_running(s) ? "" : " when it ended", s->ntasks);
	else
		pdi_json_printf(&j, "pdimon: step %s: %s — %u tasks:\n", s->name,
				pdi_step_running(s) ? "still running" : "it did not complete", s->ntasks);
	for (size_t i = 0; i < ng && i < 6; i++) {
		pdi_ranges_format(g[i].ranks, g[i].n, ranks, sizeof(ranks));
		switch (g[i].kind) {
		case TASK_BLOCKED: pdi_json_printf(&j, "pdimon:   %s blocked in %s\n", ranks, g[i].text); break;
		case TASK_IN_MPI: pdi_json_printf(&j, "pdimon:   %s in %s\n", ranks, g[i].text); break;
		case TASK_COMPUTING: pdi_json_printf(&j, "pdimon:   %s computing %s (not in MPI)\n", ranks, g[i].text); break;
		case TASK_FINISHED: pdi_json_printf(&j, "pdimon:   %s finished\n", ranks); break;
		case TASK_NO_MPI: pdi_json_printf(&j, "pdimon:   %s made no MPI call\n", ranks); break;
		}
	}
	if (lp[0])
		pdi_json_printf(&j, "pdimon: least progressed: %s — the others wait, directly or not, for %s (PDI)\n",
				lp, strchr(lp, ',') || strchr(lp, '-') ? "them" : "it");
	else if (!strcmp(kind, "hang") && ng > 1 && g[0].kind == TASK_COMPUTING) {
		pdi_ranges_format(g[0].ranks, g[0].n, ranks, sizeof(ranks));
		pdi_json_printf(&j, "pdimon: suspect %s: the others wait in MPI while it computes\n", ranks);
	}
	return pdi_json_steal(&j);
}

static void json_task(struct pdi_json *j, const struct pdi_task *t, const struct where *w, uint64_t lost)
{
	uint32_t nstates = 0, nedges = 0;

	for (uint32_t k = 0; k < t->model.nphases; k++) {
		nstates += t->model.phases[k].nstates;
		nedges += t->model.phases[k].nedges;
	}
	pdi_json_obj_begin(j);
	pdi_json_kv_int(j, "rank", t->rank);
	pdi_json_kv_int(j, "pid", t->pid);
	pdi_json_kv_str(j, "state", t->state == PDI_TASK_RUNNING ? "running" : "ended");
	pdi_json_kv_str(j, "status", kind_names[w->kind]);
	pdi_json_kv_str(j, "where", w->text);
	pdi_json_kv_uint(j, "for_ns", w->for_ns);
	pdi_json_kv_uint(j, "calls", t->model.calls);
	pdi_json_kv_uint(j, "phases", t->model.nphases);
	pdi_json_kv_uint(j, "states", nstates);
	pdi_json_kv_uint(j, "transitions", nedges);
	pdi_json_kv_uint(j, "events_lost", lost);
	pdi_json_kv_bool(j, "incomplete", lost || t->model.dropped_states || t->model.dropped_edges);
	pdi_json_obj_end(j);
}

static int report_build(struct pdi_daemon *d, struct pdi_step *s, char **ret_json, char **ret_summary);

int pdi_report_build(struct pdi_daemon *d, struct pdi_step *s, char **ret_json, char **ret_summary)
{
	int r;

	/* an ended step's report is built once: srun polls for it, and the analysis is not free */
	if (!s->report_json && !pdi_step_running(s)) {
		r = report_build(d, s, &s->report_json, &s->report_summary);
		if (r < 0)
			return r;
	}
	if (s->report_json) {
		*ret_json = strdup(s->report_json);
		*ret_summary = strdup(s->report_summary);
		if (!*ret_json || !*ret_summary) {
			free(*ret_json);
			free(*ret_summary);
			return -ENOMEM;
		}
		return 0;
	}
	return report_build(d, s, ret_json, ret_summary);
}

static int report_build(struct pdi_daemon *d, struct pdi_step *s, char **ret_json, char **ret_summary)
{
	struct where *w = calloc(s->ntasks ? s->ntasks : 1, sizeof(*w));
	struct group *g = NULL;
	size_t ng = 0;
	const char *kind;
	struct pdi_json j;
	char ranks[4096], lp[1024] = "", change[2600];
	int r;

	if (!w)
		return -ENOMEM;
	(void)pdi_tracer_drain(d->tracer);
	for (unsigned i = 0; i < s->ntasks; i++)
		locate(d, s->tasks[i], &w[i]);
	r = group_tasks(s, w, &g, &ng);
	if (r < 0) {
		free(w);
		return r;
	}
	kind = verdict_kind(g, ng, s);
	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_kv_str(&j, "step", s->name);
	pdi_json_kv_uint(&j, "job_id", s->job_id);
	pdi_json_kv_uint(&j, "step_id", s->step_id);
	pdi_json_kv_uint(&j, "uid", s->uid);
	pdi_json_kv_str(&j, "state", pdi_step_running(s) ? "running" : "ended");
	pdi_json_kv_int(&j, "started", s->started);
	pdi_json_key(&j, "ended");
	if (s->ended)
		pdi_json_int(&j, s->ended);
	else
		pdi_json_null(&j);
	pdi_json_key(&j, "verdict");
	pdi_json_obj_begin(&j);
	pdi_json_kv_str(&j, "kind", kind);
	if (!strcmp(kind, "hang")) {
		(void)least_progressed(s, w, lp, sizeof(lp), &j);
		pdi_json_kv_str(&j, "least_progressed", lp);
	}
	pdi_json_key(&j, "groups");
	pdi_json_arr_begin(&j);
	for (size_t i = 0; i < ng; i++) {
		pdi_ranges_format(g[i].ranks, g[i].n, ranks, sizeof(ranks));
		pdi_json_obj_begin(&j);
		pdi_json_kv_str(&j, "status", kind_names[g[i].kind]);
		pdi_json_kv_str(&j, "where", g[i].text);
		pdi_json_kv_str(&j, "ranks", ranks);
		pdi_json_kv_uint(&j, "count", g[i].n);
		pdi_json_obj_end(&j);
	}
	pdi_json_arr_end(&j);
	pdi_json_obj_end(&j);
	automaded(s, &j, change, sizeof(change));
	pdi_json_key(&j, "tasks");
	pdi_json_arr_begin(&j);
	for (unsigned i = 0; i < s->ntasks; i++) {
		struct pdi_task *t = s->tasks[i];
		json_task(&j, t, &w[i], t->state == PDI_TASK_RUNNING ? pdi_tracer_lost(d->tracer, t->pid) : t->lost);
	}
	pdi_json_arr_end(&j);
	pdi_json_obj_end(&j);

	*ret_json = pdi_json_steal(&j);
	*ret_summary = summary_text(s, kind, g, ng, lp);
	/* a hang is PDI's: the hung phase is the last one, which AutomaDeD leaves out */
	if (*ret_summary && change[0] && strcmp(kind, "hang")) {
		char *both;

		if (asprintf(&both, "%s%s", *ret_summary, change) >= 0) {
			free(*ret_summary);
			*ret_summary = both;
		}
	}
	for (size_t i = 0; i < ng; i++)
		free(g[i].ranks);
	free(g);
	free(w);
	if (!*ret_json || !*ret_summary) {
		free(*ret_json);
		free(*ret_summary);
		return -ENOMEM;
	}
	return 0;
}
