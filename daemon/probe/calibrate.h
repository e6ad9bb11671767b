/* SPDX-License-Identifier: GPL-2.0-only */
/* calibrate.h -- what one probe hit costs on this node, measured when pdimond starts. */
#pragma once

struct pdi_tracer;

/* Nanoseconds a probed call pays, pdimond's own BPF programs included. */
struct pdi_probe_costs {
	double full_emulated;       /* entry on an emulated instruction, and the return */
	double full_stepped;        /* entry on a single-stepped instruction, and the return */
	double entry_only_emulated; /* entry only (the budget dropped the return probe) */
	double entry_only_stepped;
};

/* Time ROUNDS x N calls of two functions of pdimond's own (one starting with an emulated push,
 * one with a single-stepped RIP-relative load) without probes and with pdimond's probes, and
 * keep the medians of the differences. Takes a few tens of ms. 0 or negative errno (RET then
 * holds conservative defaults: the figures measured on a PVM guest). */
int pdi_probe_calibrate(struct pdi_tracer *t, struct pdi_probe_costs *ret);
