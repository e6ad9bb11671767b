/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_bus.c -- the plugin's calls to pdimond on D-Bus: one connection per call, the
 * whole exchange bounded by the step's budget (spank_budget.c). sd-bus starts no thread,
 * which slurmstepd needs. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-bus.h>

#include "bus_names.h"
#include "spank_ctx.h"


/* sd-bus counts in CLOCK_MONOTONIC microseconds */
static uint64_t now_usec(void)
{
	return pdimon_now_ms() * 1000u;
}

static int bus_open(sd_bus **ret)
{
	sd_bus *bus = NULL;
	int r;

	if (!pdimon_ctx.bus[0])
		r = sd_bus_open_system(&bus);
	else {
		r = sd_bus_new(&bus);
		if (r >= 0)
			r = sd_bus_set_address(bus, pdimon_ctx.bus);
		if (r >= 0)
			r = sd_bus_set_bus_client(bus, 1);
		if (r >= 0)
			r = sd_bus_start(bus);
	}
	if (r < 0) {
		sd_bus_unref(bus);
		return r;
	}
	*ret = bus;
	return 0;
}

struct pending {
	bool done;
	sd_bus_message *reply; /* a method return */
	sd_bus_error error;    /* or the error */
	int r;
};

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct pending *p = userdata;

	(void)ret_error;
	p->done = true;
	if (sd_bus_message_is_method_error(m, NULL)) {
		p->r = sd_bus_error_copy(&p->error, sd_bus_message_get_error(m));
		if (p->r >= 0)
			p->r = -sd_bus_message_get_errno(m) ?: -EIO;
	} else {
		p->reply = sd_bus_message_ref(m);
	}
	return 0;
}

/* Send M and wait for its answer until DEADLINE (CLOCK_MONOTONIC usec): the whole exchange
 * (connecting, authenticating, the Hello, the call) is driven here with poll(), so no step
 * of it can outlast the deadline, whatever the bus or pdimond do. */
static int call_until(sd_bus *bus, sd_bus_message *m, uint64_t deadline, struct pending *p)
{
	sd_bus_slot *slot = NULL;
	int r;

	r = sd_bus_call_async(bus, &slot, m, on_reply, p, deadline - now_usec());
	while (r >= 0 && !p->done) {
		uint64_t now = now_usec(), t = UINT64_MAX;
		struct pollfd pfd;

		/* first: a bus that always has something to process must not keep us past it */
		if (now >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		r = sd_bus_process(bus, NULL);
		if (r != 0)
			continue; /* something happened (or an error): look again */
		r = sd_bus_get_events(bus);
		if (r < 0)
			break;
		pfd = (struct pollfd){.fd = sd_bus_get_fd(bus), .events = (short)r};
		if (sd_bus_get_timeout(bus, &t) < 0 || t > deadline)
			t = deadline;
		/* at most timeout_ms <= 600 s away: the ms fit an int */
		r = poll(&pfd, 1, (int)(((t > now ? t - now : 0) + 999) / 1000));
		if (r < 0 && errno == EINTR)
			r = 0;
		else if (r < 0)
			r = -errno;
	}
	sd_bus_slot_unref(slot);
	return r < 0 ? r : p->r;
}

int pdimon_bus_call(const char *method, char *why, size_t whylen, void **ret_reply, const char *types, ...)
{
	struct pending p = {.error = SD_BUS_ERROR_NULL};
	sd_bus_message *m = NULL;
	sd_bus *bus = NULL;
	unsigned ms = pdimon_budget_call_ms(why, whylen);
	uint64_t t0 = pdimon_now_ms();
	va_list ap;
	int r;

	if (!ms) {
		pdimon_ctx.budget.skipped++;
		return -ETIME;
	}
	r = bus_open(&bus);
	if (r < 0) {
		snprintf(why, whylen, "cannot reach the system bus%s%s: %s", pdimon_ctx.bus[0] ? " at " : "",
			 pdimon_ctx.bus, strerror(-r));
		pdimon_budget_give_up(why);
		pdimon_budget_spend(pdimon_now_ms() - t0);
		return r;
	}
	r = sd_bus_message_new_method_call(bus, &m, PDI_BUS_NAME, PDI_BUS_PATH, PDI_BUS_IFACE, method);
	if (r >= 0) {
		va_start(ap, types);
		r = sd_bus_message_appendv(m, types, ap);
		va_end(ap);
	}
	if (r >= 0)
		r = call_until(bus, m, now_usec() + (uint64_t)ms * 1000u, &p);
	if (r < 0) {
		/* no answer from pdimond itself: the step is not worth another wait */
		if (sd_bus_error_has_name(&p.error, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
		    sd_bus_error_has_name(&p.error, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
			snprintf(why, whylen, "pdimond is not running on this node");
			pdimon_budget_give_up(why);
		} else if (r == -ETIMEDOUT || sd_bus_error_has_name(&p.error, SD_BUS_ERROR_NO_REPLY)) {
			snprintf(why, whylen, "pdimond did not answer within %u ms", ms);
			pdimon_budget_give_up(why);
		} else if (sd_bus_error_is_set(&p.error)) {
			snprintf(why, whylen, "%s", p.error.message ? p.error.message : p.error.name);
		} else {
			snprintf(why, whylen, "%s", strerror(-r));
			pdimon_budget_give_up(why);
		}
	} else if (ret_reply) {
		*ret_reply = sd_bus_message_ref(p.reply);
	}
	sd_bus_error_free(&p.error);
	sd_bus_message_unref(p.reply);
	sd_bus_message_unref(m);
	sd_bus_close_unref(bus); /* nothing left to send: a flush could wait for a stuck bus */
	pdimon_budget_spend(pdimon_now_ms() - t0);
	return r < 0 ? r : 0;
}

int pdimon_bus_reply_report(void *reply, const char **ret_json, const char **ret_summary)
{
	int r = sd_bus_message_rewind(reply, 1);

	return r < 0 ? r : sd_bus_message_read(reply, "ss", ret_json, ret_summary);
}

void pdimon_bus_reply_free(void *reply)
{
	sd_bus_message_unref(reply);
}
