/* SPDX-License-Identifier: GPL-2.0-only */
/* test-alike.c -- every rank lost CPU alike (lib/analysis/alike.c): named where the job's own group
 * used the CPU its ranks lost, silent where it did not (a busier node), where what the group used
 * beyond its ranks is only noise, and where the group was not read. Models of 4 ranks in phases of
 * 1 s (MPI_Pcontrol), read on pdimond's 50 ms timer, each reading with the group's CPU beside it. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "automaded.h"
#include "model.h"
#include "mpi_funcs.h"
#include "starved.h"

#define NTASKS 4
#define MS 1000000ull
#define TICK_NS (50 * MS)
#define END_S 20.0
#define SHARE 0.4      /* every rank's share of the CPU (ready all the time: CPUs) */
#define LOW_SHARE 0.1  /* ... while the node or the job's own process takes it, every rank alike */
#define FALL_FROM 8.0  /* s: phase 8 */
#define FALL_TO 13.0
#define OTHERS 0.01    /* what the group uses beyond its ranks (mpirun, pdimon run) */

#define BUSIER_FROM 15.0 /* s: the node busier for everyone later (OTHERS_HOG_THEN_BUSIER) */
#define BUSIER_TO 18.5
#define BUSIER_SHARE 0.05

#define DIP_SHARE 0.02 /* OTHERS_HOG_DIPS: each rank in turn, a quarter of each second of the fall */

enum others { OTHERS_FLAT, OTHERS_HOG, OTHERS_NOISE, OTHERS_UNREAD, OTHERS_HOG_THEN_BUSIER, OTHERS_HOG_DIPS };

/* Time in [A, B) up to S. */
static double inside(double s, double a, double b)
{
	return fmax(0.0, fmin(s, b) - a);
}

/* The CPU rank TASK used by S (s) under O: with OTHERS_HOG_THEN_BUSIER the node took more from
 * every rank later on; with OTHERS_HOG_DIPS each rank in turn got less still for a quarter of each
 * second of the fall (the hog's CPU visited by the ranks one after the other). */
static double rank_cpu(enum others o, int task, double s)
{
	double v = SHARE * s - (SHARE - LOW_SHARE) * inside(s, FALL_FROM, FALL_TO);

	if (o == OTHERS_HOG_THEN_BUSIER)
		v -= (SHARE - BUSIER_SHARE) * inside(s, BUSIER_FROM, BUSIER_TO);
	for (double at = FALL_FROM + task * 0.25; o == OTHERS_HOG_DIPS && at < FALL_TO; at += 1)
		v -= (LOW_SHARE - DIP_SHARE) * inside(s, at, at + 0.25);
	return v;
}

/* The CPU the group used beyond its ranks by S: flat, plus a hog of HOG CPUs while the ranks fell,
 * or noise of 0-0.04 CPUs from one 50 ms tick to the next (a helper thread now and then). */
static double others_cpu(enum others o, double s, double hog)
{
	double v = OTHERS * s;

	if (o == OTHERS_HOG || o == OTHERS_HOG_THEN_BUSIER || o == OTHERS_HOG_DIPS)
		v += hog * inside(s, FALL_FROM, FALL_TO);
	if (o == OTHERS_NOISE)
		for (unsigned k = 0; k * 0.05 < s; k++)
			v += 0.04 * ((k * 2654435761u >> 7) % 100) / 100.0 * inside(s, k * 0.05, (k + 1) * 0.05);
	return v;
}

static struct pdi_usage counts_at(enum others o, double hog, int task, uint64_t t)
{
	double s = (double)t / 1e9, cpu = rank_cpu(o, task, s), ranks = 0;

	for (int k = 0; k < NTASKS; k++)
		ranks += rank_cpu(o, k, s);
	return (struct pdi_usage){.at_ns = t, .cpu_ns = (uint64_t)(cpu * 1e9), .wait_ns = (uint64_t)((s - cpu) * 1e9),
				  .group_ns = o == OTHERS_UNREAD ? 0 : (uint64_t)((ranks + others_cpu(o, s, hog)) * 1e9)};
}

static void add_call(struct pdi_model *m, enum others o, double hog, int task, const char *fn, uint32_t site,
		     uint64_t t, uint64_t *tick)
{
	struct pdi_call c = {.site = site, .fn = (uint16_t)pdi_mpi_func_find(fn), .peer = PDI_NO_PEER,
			     .t_enter = t, .t_exit = t + 100000};

	for (; m->nphases && *tick <= c.t_exit; *tick += TICK_NS) {
		struct pdi_usage u = counts_at(o, hog, task, *tick);

		pdi_model_usage_add(m, &u);
	}
	cr_assert_eq(pdi_model_add_call(m, &c), 0);
}

static void build(struct pdi_model *m, enum others o, double hog, int task)
{
	uint64_t tick = TICK_NS, cut = 1;

	pdi_model_init(m, NULL);
	add_call(m, o, hog, task, "MPI_Init", 0, MS, &tick);
	for (uint64_t t = 2 * MS; t < (uint64_t)(END_S * 1e9); t += 10 * MS) {
		if (t >= cut * 1000 * MS) {
			add_call(m, o, hog, task, "MPI_Pcontrol", 1, cut * 1000 * MS, &tick);
			cut++;
		}
		add_call(m, o, hog, task, "MPI_Waitall", 2, t, &tick);
	}
	add_call(m, o, hog, task, "MPI_Finalize", 3, (uint64_t)(END_S * 1e9), &tick);
	add_call(m, o, hog, task, "MPI_Waitall", 2, (uint64_t)(END_S * 1e9) + 60 * MS, &tick); /* the last reading */
}

struct step {
	struct pdi_model m[NTASKS];
	const struct pdi_model *models[NTASKS];
	struct pdi_starved s;
	struct pdi_automaded am;
};

static void run(struct step *st, enum others o, double hog)
{
	const char *why = NULL;

	for (int t = 0; t < NTASKS; t++) {
		build(&st->m[t], o, hog, t);
		st->models[t] = &st->m[t];
	}
	cr_assert_eq(pdi_starved_find(st->models, NULL, NTASKS, 0, st->m[0].nphases, &st->s), 0);
	cr_assert_eq(pdi_automaded_run(&(struct pdi_automaded_input){.models = st->models, .n = NTASKS,
								       .dist = PDI_TIME_GAUSS},
				       &st->am, &why),
		     0, "%s", why ? why : "");
}

static void done(struct step *st)
{
	pdi_starved_done(&st->s);
	pdi_automaded_done(&st->am);
	for (int t = 0; t < NTASKS; t++)
		pdi_model_done(&st->m[t]);
}

Test(alike, a_process_of_the_jobs_own_group_that_took_every_ranks_cpu_is_found)
{
	struct step st;
	const struct pdi_alike *a = &st.s.alike;
	char text[400];

	run(&st, OTHERS_HOG, 0.5); /* the ranks lost 1.2 CPUs, the group's others took 0.5 of it */
	cr_assert(a->read && a->fell && a->found, "read %d fell %d took %.2f", a->read, a->fell, a->took);
	cr_assert_eq(a->onset, 8, "the run's onset: phase %u", a->onset);
	cr_assert_eq(a->last, 12);
	cr_assert_float_eq(a->fall, SHARE / LOW_SHARE, 0.3);
	cr_assert_float_eq(a->others_during - a->others_before, 0.5, 0.05);
	cr_assert_float_eq(a->ranks_before - a->ranks_during, NTASKS * (SHARE - LOW_SHARE), 0.05);
	cr_assert_geq(a->z, 8, "z %.1f", a->z);
	cr_assert_geq(a->group_z, 8, "the group's gain against its own spread: %.1f", a->group_z);
	cr_assert(!st.s.found, "no rank fell behind its peers");
	cr_assert(st.am.by_group && !st.am.by_starved, "AutomaDeD's phase is the group's");
	cr_assert_eq(st.am.faulty_phase, 8);
	pdi_alike_text(a, text, sizeof(text));
	cr_assert(strstr(text, "a process of the job's own, not one of its ranks, took 0.50 CPUs") &&
		  strstr(text, "from phase 8 to 12"), "%s", text);
	done(&st);
}

Test(alike, the_run_the_group_took_beats_a_deeper_one_of_a_busier_node)
{
	struct step st;
	const struct pdi_alike *a = &st.s.alike;

	run(&st, OTHERS_HOG_THEN_BUSIER, 0.5); /* phases 15-18 fall further, the group gives nothing there */
	cr_assert(a->found, "took %.2f", a->took);
	cr_assert_eq(a->onset, 8, "the hog's run, not the node's: phase %u", a->onset);
	cr_assert(st.am.by_group);
	cr_assert_eq(st.am.faulty_phase, 8);
	done(&st);
}

Test(alike, a_share_finding_that_names_every_rank_yields_to_the_groups)
{
	struct step st;

	run(&st, OTHERS_HOG_DIPS, 0.5); /* each rank in turn at a fifth of its peers' share */
	cr_assert(st.s.found, "the shares find a run");
	for (size_t t = 0; t < NTASKS; t++)
		cr_assert(pdi_starved_named(&st.s, t), "rank %zu named: every rank fell as far behind", t);
	cr_assert(st.s.alike.found);
	cr_assert(st.am.by_group && !st.am.by_starved, "no rank stood apart: the group's finding");
	cr_assert_eq(st.am.faulty_phase, 8);
	done(&st);
}

/* Every rank fell alike in phases 8-12 and nothing is named: the run is found, the group's part
 * not; the text says SAYS. */
static void silent(struct step *st, enum others o, double hog, const char *says)
{
	const struct pdi_alike *a = &st->s.alike;
	char text[400];

	run(st, o, hog);
	cr_assert(a->fell && !a->found, "took %.2f (%.3f -> %.3f CPUs)", a->took, a->others_before, a->others_during);
	cr_assert_eq(a->onset, 8);
	cr_assert(!st->am.by_group);
	pdi_alike_text(a, text, sizeof(text));
	cr_assert(strstr(text, says), "%s", text);
}

Test(alike, every_rank_alike_without_the_groups_cpu_is_a_busier_node)
{
	struct step st;

	silent(&st, OTHERS_FLAT, 0, "the node was busier");
	cr_assert(st.s.alike.read);
	cr_assert_float_eq(st.s.alike.others_during, OTHERS, 0.01);
	done(&st);
}

Test(alike, noise_in_what_the_group_used_beyond_its_ranks_is_silent)
{
	struct step st;

	silent(&st, OTHERS_NOISE, 0, "the node was busier");
	done(&st);
}

Test(alike, a_small_hog_in_the_group_against_a_large_loss_is_silent)
{
	struct step st;

	silent(&st, OTHERS_HOG, 0.1, "too little beyond its ranks"); /* 0.1 of 1.2 CPUs lost: the node took the rest */
	done(&st);
}

Test(alike, without_the_groups_cpu_the_rule_is_silent)
{
	struct step st;

	silent(&st, OTHERS_UNREAD, 0, "no cgroup of its own");
	cr_assert(!st.s.alike.read);
	done(&st);
}
