/* SPDX-License-Identifier: GPL-2.0-only */
/* node.c -- gather-node, the program test_gather.py runs: a gather node, or a gather's root.
 *
 *   gather-node serve --name ADDR --port P --munge SOCKET [--rank0 R] [--tasks T]
 *                     [--fanout K] [--timeout MS] [--delay-ms D] [--model-bytes B]
 *       serve gathers on ADDR:P until SIGTERM; writes one byte on stdout once listening
 *   gather-node root --name ADDR --port P --munge SOCKET --nodes A,B,... [--fanout K]
 *                    [--timeout MS] [--uid U] [--as-uid U] [--service-uid U]
 *       run one gather for UID (default 0) as node ADDR (position 0), after setuid(AS_UID)
 *       when given; prints "result answered=N missing=M ms=T ranks=R classes=C dup=0|1
 *       bad_model=0|1 malformed=0|1", then "missing NODE: WHY" per missing node, or
 *       "error: ..." and exits 1. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gnode.h"
#include "log.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned split(char *s, char **out, unsigned max)
{
	unsigned n = 0;

	for (char *save = NULL, *w = strtok_r(s, ",", &save); w && n < max; w = strtok_r(NULL, ",", &save))
		out[n++] = w;
	return n;
}

static int run_root(const struct gnode_options *o, char *nodes_arg, uid_t uid, long as_uid)
{
	static char *nodes[4096];
	struct gnode node = {.o = o};
	struct pdi_gather_options go = {.node_name = o->name, .bind_address = o->name, .port = o->port,
					.munge_socket = o->munge_socket, .fanout = o->fanout, .level_ms = o->level_ms,
					.service_uid = o->service_uid};
	struct pdi_gather_result res = {0}, self = {0};
	struct pdi_gather *g = NULL;
	struct gnode_check chk;
	unsigned n = split(nodes_arg, nodes, 4096);
	uint64_t t0;
	int r;

	if (as_uid >= 0 && setuid((uid_t)as_uid) < 0) {
		printf("error: setuid: %s\n", strerror(errno));
		return 1;
	}
	r = pdi_gather_new(&go, &gnode_ops, &node, &g);
	node.g = g;
	t0 = now_ns();
	/* the root's own part first: a caller who may not read the step bothers nobody */
	if (r == 0)
		r = gnode_own_part(&node, uid, &self);
	if (r == 0)
		r = pdi_gather_run(g, 42, 7, "42.7", uid, (const char *const *)nodes, n, 0, 0, &self, &res);
	pdi_gather_result_done(&self);
	if (r < 0) {
		printf("error: %s\n", strerror(-r));
		pdi_gather_free(g);
		return 1;
	}
	gnode_check_payload(res.payload, res.len, o->model_bytes, &chk);
	printf("result answered=%u missing=%u ms=%.1f ranks=%u classes=%u dup=%d bad_model=%d malformed=%d\n",
	       res.answered, res.nmissing, (double)(now_ns() - t0) / 1e6, chk.nranks, chk.nclasses, chk.duplicate,
	       chk.bad_model, chk.malformed);
	for (unsigned i = 0; i < res.nmissing; i++)
		printf("missing %s: %s\n", res.missing[i], res.missing_why[i]);
	pdi_gather_result_done(&res);
	pdi_gather_free(g);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},      {"port", required_argument, NULL, 'p'},
		{"munge", required_argument, NULL, 'm'},     {"rank0", required_argument, NULL, 'r'},
		{"tasks", required_argument, NULL, 't'},     {"fanout", required_argument, NULL, 'k'},
		{"timeout", required_argument, NULL, 'T'},   {"delay-ms", required_argument, NULL, 'd'},
		{"model-bytes", required_argument, NULL, 'b'}, {"nodes", required_argument, NULL, 'N'},
		{"uid", required_argument, NULL, 'u'},       {"as-uid", required_argument, NULL, 'a'},
		{"service-uid", required_argument, NULL, 's'}, {0},
	};
	struct gnode_options o = {.fanout = 32, .level_ms = 2000, .ntasks = 64, .model_bytes = 2048,
				  .service_uid = geteuid(), .ready_fd = -1};
	char *nodes = NULL;
	long as_uid = -1;
	uid_t uid = 0;
	int c;

	if (argc < 2 || (strcmp(argv[1], "serve") && strcmp(argv[1], "root"))) {
		fprintf(stderr, "usage: gather-node serve|root OPTIONS (see node.c)\n");
		return 2;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		switch (c) {
		case 'n': o.name = optarg; break;
		case 'p': o.port = (uint16_t)atoi(optarg); break;
		case 'm': o.munge_socket = optarg; break;
		case 'r': o.rank0 = (uint32_t)atoi(optarg); break;
		case 't': o.ntasks = (uint32_t)atoi(optarg); break;
		case 'k': o.fanout = (unsigned)atoi(optarg); break;
		case 'T': o.level_ms = (unsigned)atoi(optarg); break;
		case 'd': o.local_delay_ms = (unsigned)atoi(optarg); break;
		case 'b': o.model_bytes = (uint32_t)atoi(optarg); break;
		case 'N': nodes = optarg; break;
		case 'u': uid = (uid_t)atol(optarg); break;
		case 'a': as_uid = atol(optarg); break;
		case 's': o.service_uid = (uid_t)atol(optarg); break;
		default: return 2;
		}
	}
	if (!o.name || !o.port) {
		fprintf(stderr, "gather-node: --name and --port are needed\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pdi_log_level = PDI_LOG_INFO;
	if (!strcmp(argv[1], "root"))
		return nodes ? run_root(&o, nodes, uid, as_uid) : 2;
	o.ready_fd = STDOUT_FILENO;
	c = gnode_serve(&o);
	if (c < 0)
		fprintf(stderr, "gather-node: %s\n", strerror(-c));
	return c < 0 ? 1 : 0;
}
