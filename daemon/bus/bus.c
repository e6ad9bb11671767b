/* SPDX-License-Identifier: GPL-2.0-only */
/* bus.c -- the D-Bus face of pdimond (sd-bus): arguments in, api.c, replies and errors out.
 *
 * Every method is marked unprivileged for sd-bus, because api.c authorizes each call from
 * the sender's credentials itself; the bus policy only lets calls reach us. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include <systemd/sd-bus.h>

#include "access.h"
#include "api.h"
#include "bus.h"
#include "subscribe.h"
#include "daemon.h"
#include "log.h"

static int get_caller(sd_bus_message *m, struct pdi_daemon *d, struct pdi_caller *ret)
{
	sd_bus_creds *creds = NULL;
	uid_t uid;
	int r;

	/* what the bus vouches for, never /proc (sd-bus calls augmented credentials racy) */
	r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_UID, &creds);
	if (r >= 0 && sd_bus_creds_get_euid(creds, &uid) < 0)
		r = sd_bus_creds_get_uid(creds, &uid);
	sd_bus_creds_unref(creds);
	if (r < 0)
		return r;
	*ret = pdi_caller_of(d, uid);
	return 0;
}

/* Send REP: its text as the "s" result, or its errno and message as a D-Bus error. */
static int reply(sd_bus_message *m, sd_bus_error *error, struct pdi_reply rep)
{
	int r;

	if (rep.status < 0)
		r = sd_bus_error_set_errnof(error, -rep.status, "%s", rep.text ? rep.text : strerror(-rep.status));
	else
		r = sd_bus_reply_method_return(m, "s", rep.text);
	free(rep.text);
	return r;
}

#define WITH_CALLER(m, d, error, c)                                                               \
	do {                                                                                       \
		int r_ = get_caller(m, d, &c);                                                     \
		if (r_ < 0)                                                                        \
			return sd_bus_error_set_errnof(error, -r_, "Cannot tell who is calling");  \
	} while (0)

/* ---- methods answered later: the call message is kept until a worker is done ---- */

struct kept_call {
	sd_bus_message *m;
	bool two; /* answers "ss" (GetReport), else "s" */
};

static void answer_kept(void *ctx, struct pdi_reply rep, char *summary)
{
	struct kept_call *k = ctx;
	int r;

	if (rep.status < 0)
		r = sd_bus_reply_method_errnof(k->m, -rep.status, "%s", rep.text ? rep.text : strerror(-rep.status));
	else if (k->two)
		r = sd_bus_reply_method_return(k->m, "ss", rep.text, summary);
	else
		r = sd_bus_reply_method_return(k->m, "s", rep.text);
	/* a caller gone meanwhile costs one failed send */
	if (r < 0)
		log_debug("Cannot send a late answer, ignoring: %s", strerror(-r));
	free(rep.text);
	free(summary);
	sd_bus_message_unref(k->m);
	free(k);
}

static struct kept_call *keep(sd_bus_message *m, bool two)
{
	struct kept_call *k = calloc(1, sizeof(*k));

	if (k) {
		k->m = sd_bus_message_ref(m);
		k->two = two;
	}
	return k;
}

/* REP now (freeing K), or nothing: the answer comes to K later. */
static int reply_or_keep(sd_bus_message *m, sd_bus_error *error, struct kept_call *k, struct pdi_reply rep,
			 char *summary)
{
	int r;

	if (rep.status == PDI_REPLY_LATER)
		return 1;
	sd_bus_message_unref(k->m);
	free(k);
	if (rep.status < 0 || !summary)
		return reply(m, error, rep);
	r = sd_bus_reply_method_return(m, "ss", rep.text, summary);
	free(rep.text);
	free(summary);
	return r;
}

static int method_status(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	struct pdi_daemon *d = userdata;
	struct pdi_caller c;
	int json, r;

	r = sd_bus_message_read(m, "b", &json);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	return reply(m, error, pdi_api_status(d, &c, json));
}

static int method_list_steps(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	struct pdi_daemon *d = userdata;
	struct pdi_caller c;
	int json, all, r;

	r = sd_bus_message_read(m, "bb", &json, &all);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	return reply(m, error, pdi_api_steps(d, &c, json, all));
}

/* A method that takes (step, format) and answers one string. */
static int step_format_method(sd_bus_message *m, struct pdi_daemon *d, sd_bus_error *error,
			      struct pdi_reply (*api)(struct pdi_daemon *, const struct pdi_caller *, const char *,
						      const char *))
{
	const char *step, *format;
	struct pdi_caller c;
	int r;

	r = sd_bus_message_read(m, "ss", &step, &format);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	return reply(m, error, api(d, &c, step, format));
}

static int method_get_step(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	return step_format_method(m, userdata, error, pdi_api_show);
}

static int method_attach(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	struct pdi_daemon *d = userdata;
	const uint32_t *pids;
	struct pdi_caller c;
	const char *step;
	pid_t *v;
	size_t size;
	int r;

	r = sd_bus_message_read(m, "s", &step);
	if (r < 0)
		return r;
	r = sd_bus_message_read_array(m, 'u', (const void **)&pids, &size);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	size /= sizeof(*pids);
	if (size > 65536)
		return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Too many pids (%zu)", size);
	v = calloc(size ? size : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < size; i++)
		v[i] = pids[i] > INT32_MAX ? -1 : (pid_t)pids[i];
	r = reply(m, error, pdi_api_attach(d, &c, step, v, (unsigned)size));
	free(v);
	return r;
}

static int method_watch(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	struct pdi_daemon *d = userdata;
	struct pdi_caller c;
	const char *step;
	uint32_t pid;
	int r;

	r = sd_bus_message_read(m, "su", &step, &pid);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	return reply(m, error, pdi_api_watch(d, &c, step, pid > INT32_MAX ? -1 : (pid_t)pid));
}

static int method_unwatch(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	struct pdi_daemon *d = userdata;
	struct kept_call *k;
	struct pdi_caller c;
	uint32_t pid;
	int r;

	r = sd_bus_message_read(m, "u", &pid);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	if (!(k = keep(m, false)))
		return -ENOMEM;
	return reply_or_keep(m, error, k,
			     pdi_api_unwatch(d, &c, pid > INT32_MAX ? -1 : (pid_t)pid, &(struct pdi_later){answer_kept, k}),
			     NULL);
}

static int method_register_task(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	struct pdi_daemon *d = userdata;
	uint32_t job, step, rank, pid, uid;
	struct pdi_caller c;
	const char *options;
	int r;

	r = sd_bus_message_read(m, "uuuuus", &job, &step, &rank, &pid, &uid, &options);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	return reply(m, error, pdi_api_register_task(d, &c, job, step, rank, pid > INT32_MAX ? -1 : (pid_t)pid,
						     (uid_t)uid, options));
}

static int method_get_report(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	struct pdi_daemon *d = userdata;
	struct kept_call *k;
	struct pdi_caller c;
	struct pdi_reply rep;
	char *summary = NULL;
	const char *step;
	int r;

	r = sd_bus_message_read(m, "s", &step);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	if (!(k = keep(m, true)))
		return -ENOMEM;
	rep = pdi_api_report(d, &c, step, &summary, &(struct pdi_later){answer_kept, k});
	return reply_or_keep(m, error, k, rep, summary);
}

/* A method that takes two strings and answers one, maybe later (Analyze, Trends). */
static int two_strings_later(sd_bus_message *m, struct pdi_daemon *d, sd_bus_error *error,
			     struct pdi_reply (*api)(struct pdi_daemon *, const struct pdi_caller *, const char *,
						     const char *, const struct pdi_later *))
{
	const char *a, *b;
	struct kept_call *k;
	struct pdi_caller c;
	int r;

	r = sd_bus_message_read(m, "ss", &a, &b);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	if (!(k = keep(m, false)))
		return -ENOMEM;
	return reply_or_keep(m, error, k, api(d, &c, a, b, &(struct pdi_later){answer_kept, k}), NULL);
}

static int method_analyze(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	return two_strings_later(m, userdata, error, pdi_api_analyze);
}

static int method_trends(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	return two_strings_later(m, userdata, error, pdi_api_trends);
}

static int method_end_step(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	struct pdi_daemon *d = userdata;
	uint32_t job, step;
	struct pdi_caller c;
	int r;

	r = sd_bus_message_read(m, "uu", &job, &step);
	if (r < 0)
		return r;
	WITH_CALLER(m, d, error, c);
	return reply(m, error, pdi_api_end_step(d, &c, job, step));
}

static int method_subscribe(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	struct pdi_daemon *d = userdata;
	struct pdi_caller c;

	WITH_CALLER(m, d, error, c);
	return pdi_bus_subscribe(d, m, c.uid, error);
}

static const sd_bus_vtable monitor_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD_WITH_ARGS("Status", SD_BUS_ARGS("b", json), SD_BUS_RESULT("s", status),
				method_status, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("ListSteps", SD_BUS_ARGS("b", json, "b", all), SD_BUS_RESULT("s", steps),
				method_list_steps, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("GetStep", SD_BUS_ARGS("s", step, "s", format), SD_BUS_RESULT("s", model),
				method_get_step, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Attach", SD_BUS_ARGS("s", step, "au", pids), SD_BUS_RESULT("s", attached),
				method_attach, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Watch", SD_BUS_ARGS("s", step, "u", pid), SD_BUS_RESULT("s", result),
				method_watch, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Unwatch", SD_BUS_ARGS("u", pid), SD_BUS_RESULT("s", result),
				method_unwatch, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("GetReport", SD_BUS_ARGS("s", step), SD_BUS_RESULT("s", report, "s", summary),
				method_get_report, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Analyze", SD_BUS_ARGS("s", step, "s", format), SD_BUS_RESULT("s", analysis),
				method_analyze, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("RegisterTask",
				SD_BUS_ARGS("u", job_id, "u", step_id, "u", rank, "u", pid, "u", uid, "s", options),
				SD_BUS_RESULT("s", result), method_register_task, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("EndStep", SD_BUS_ARGS("u", job_id, "u", step_id), SD_BUS_RESULT("s", result),
				method_end_step, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Trends", SD_BUS_ARGS("s", program, "s", format), SD_BUS_RESULT("s", trends),
				method_trends, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Subscribe", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_subscribe,
				SD_BUS_VTABLE_UNPRIVILEGED),
	/* sent unicast to subscribers only (subscribe.c), never broadcast */
	SD_BUS_SIGNAL_WITH_ARGS("StepEnded", SD_BUS_ARGS("s", step, "s", state), 0),
	SD_BUS_SIGNAL_WITH_ARGS("StepHealthChanged", SD_BUS_ARGS("s", step, "s", health, "s", verdict), 0),
	SD_BUS_VTABLE_END,
};

static int update_epoll(struct pdi_daemon *d, int op)
{
	struct epoll_event ev = {.data.u64 = PDI_SRC(PDI_SRC_BUS, 0)};
	int events = sd_bus_get_events(d->bus);

	if (events < 0)
		return events;
	ev.events = (uint32_t)events;
	return epoll_ctl(d->epoll_fd, op, sd_bus_get_fd(d->bus), &ev) < 0 ? -errno : 0;
}

int pdi_bus_open(struct pdi_daemon *d)
{
	int r;

	r = sd_bus_open_system(&d->bus);
	if (r < 0)
		return log_error_errno(r, "Cannot connect to the system bus: %m (is dbus running? "
					  "DBUS_SYSTEM_BUS_ADDRESS names another one)");
	r = sd_bus_add_object_vtable(d->bus, NULL, PDI_BUS_PATH, PDI_BUS_IFACE, monitor_vtable, d);
	if (r < 0)
		return log_error_errno(r, "Cannot export %s: %m", PDI_BUS_PATH);
	r = sd_bus_request_name(d->bus, PDI_BUS_NAME, 0);
	if (r == -EEXIST)
		return log_error_errno(r, "Another pdimond owns %s on this bus", PDI_BUS_NAME);
	if (r == -EACCES || r == -EPERM)
		return log_error_errno(r, "The bus policy does not let pdimond own %s: install "
					  "packaging/org.pdimon.Monitor1.conf in /etc/dbus-1/system.d", PDI_BUS_NAME);
	if (r < 0)
		return log_error_errno(r, "Cannot take the name %s: %m", PDI_BUS_NAME);
	return update_epoll(d, EPOLL_CTL_ADD);
}

void pdi_bus_close(struct pdi_daemon *d)
{
	pdi_bus_subscribers_free(d);
	if (d->bus)
		(void)sd_bus_flush(d->bus);
	d->bus = sd_bus_flush_close_unref(d->bus);
}

void pdi_bus_process(struct pdi_daemon *d)
{
	int r = 0;

	if (!d->bus)
		return;
	/* bounded: a flood of calls must not starve the ring buffer */
	for (int i = 0; i < 256; i++) {
		r = sd_bus_process(d->bus, NULL);
		if (r <= 0)
			break;
	}
	if (r < 0 && r != -EBUSY) {
		log_error_errno(r, "Lost the bus connection: %m; exiting so that a restart reconnects");
		d->quit = true;
		d->failed = true;
		return;
	}
	(void)update_epoll(d, EPOLL_CTL_MOD);
}

int pdi_bus_timeout_ms(struct pdi_daemon *d)
{
	uint64_t usec, now;

	if (!d->bus || sd_bus_get_timeout(d->bus, &usec) <= 0 || usec == UINT64_MAX)
		return -1;
	now = pdi_now_ns() / 1000; /* sd-bus's timeouts are CLOCK_MONOTONIC microseconds */
	return usec <= now ? 0 : (int)((usec - now + 999) / 1000);
}

