/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_ctx.h -- what the contexts of the SPANK plugin (srun, slurmstepd) share: the step's
 * settings and state (spank_ctx.c), its budget, the calls to pdimond and the HTML report. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <slurm/spank.h>

#define PDI_PREFIX "pdimon: "

/* What the plugin may still spend on pdimond for this step, in this process. */
struct pdimon_budget {
	uint64_t spent_ms;       /* real time spent on pdimond so far, at most budget_ms */
	bool gave_up;            /* pdimond did not answer: not called again */
	char why[200];
	unsigned skipped;        /* calls not made because of it */
};

struct pdimon_ctx {
	bool enabled;            /* monitor this step: the site default, or what the user said */
	char report[PATH_MAX];   /* where srun writes the JSON report, "" for pdimon-JOB.STEP.json */
	char options[64];        /* passed to pdimond with each task: "phases=..." */
	char input_size[24];     /* size=N: the run's input size, for pdimon trends; "" when not given */
	char on_hang[16];        /* on-hang=ACTION: report, command or cancel; "" for the site's */
	bool notify_off;         /* notify=off: pdimond says nothing on the step's output */
	char bus[256];           /* D-Bus address of pdimond's bus, "" for the system bus */
	char cli[PATH_MAX];      /* the pdimon CLI that renders HTML reports, "" for the installed one */
	unsigned timeout_ms;     /* bound on every call to pdimond */
	unsigned wait_ms;        /* how long srun waits for the step's end to reach pdimond */
	unsigned budget_ms;      /* the most the plugin spends on pdimond per step and process */
	struct pdimon_budget budget;
	bool registered;         /* slurmstepd: at least one task was registered */
	bool have_step;          /* srun: the ids of its step are known */
	uint32_t job_id, step_id;
};

extern struct pdimon_ctx pdimon_ctx;

/* The step's budget (spank_budget.c): the real time this process spent on pdimond for the
 * step; each call takes at most what is left of it and at most timeout_ms. */
void pdimon_budget_spend(uint64_t ms);
/* CLOCK_MONOTONIC in ms: every deadline of the plugin. */
uint64_t pdimon_now_ms(void);
unsigned pdimon_budget_left_ms(void);
/* The time the next call may take, ms; 0 when no call may be made (budget spent, or
 * pdimond gave no answer before), with the reason in WHY. */
unsigned pdimon_budget_call_ms(char *why, size_t whylen);
/* pdimond did not answer for WHY: no more calls for this step. */
void pdimon_budget_give_up(const char *why);

/* Call METHOD on pdimond with arguments TYPES...; the reply in *ret_reply if not NULL.
 * Bounded by the budget: a call pdimond does not answer (no reply in time, not on the bus)
 * ends the calls for this step. Returns 0 or a negative errno with a one-line reason in
 * WHY: -ETIME when no call was made (the budget spent, or pdimond gave no answer before). */
int pdimon_bus_call(const char *method, char *why, size_t whylen, void **ret_reply, const char *types, ...);
/* The report and summary of a GetReport reply; they live as long as the reply. */
int pdimon_bus_reply_report(void *reply, const char **ret_json, const char **ret_summary);
void pdimon_bus_reply_free(void *reply);

/* srun: REPORT names an HTML page (.html, .htm); write JSON there as one, through the CLI
 * (spank_html.c). 0, or a negative errno with a one-line reason in WHY. */
bool pdimon_html_wanted(const char *path);
int pdimon_write_html(const char *path, const char *json, char *why, size_t whylen);

/* Steps that are no MPI job: batch scripts, the extern step, interactive steps. */
bool pdimon_skip_step(uint32_t step_id);
