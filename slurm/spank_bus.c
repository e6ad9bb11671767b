/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_bus.c -- the plugin's calls to pdimond on D-Bus: one connection per call, every
 * step bounded by the configured timeout. sd-bus starts no thread, which slurmstepd needs. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "spank_pdimon.h"

#define BUS_NAME "org.pdimon.Monitor1"
#define BUS_PATH "/org/pdimon/Monitor1"

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
	if (r >= 0)
		r = sd_bus_set_method_call_timeout(bus, (uint64_t)pdimon_ctx.timeout_ms * 1000);
	if (r < 0) {
		sd_bus_unref(bus);
		return r;
	}
	*ret = bus;
	return 0;
}

int pdimon_bus_call(const char *method, char *why, size_t whylen, void **ret_reply, const char *types, ...)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus *bus = NULL;
	va_list ap;
	int r;

	r = bus_open(&bus);
	if (r < 0) {
		snprintf(why, whylen, "cannot reach the system bus%s%s: %s", pdimon_ctx.bus[0] ? " at " : "",
			 pdimon_ctx.bus, strerror(-r));
		return r;
	}
	r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, BUS_PATH, BUS_NAME, method);
	if (r >= 0) {
		va_start(ap, types);
		r = sd_bus_message_appendv(m, types, ap);
		va_end(ap);
	}
	if (r >= 0)
		r = sd_bus_call(bus, m, 0, &error, &reply);
	if (r < 0) {
		if (sd_bus_error_has_name(&error, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
		    sd_bus_error_has_name(&error, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
			snprintf(why, whylen, "pdimond is not running on this node");
		else if (r == -ETIMEDOUT || sd_bus_error_has_name(&error, SD_BUS_ERROR_NO_REPLY))
			snprintf(why, whylen, "pdimond did not answer within %u ms", pdimon_ctx.timeout_ms);
		else
			snprintf(why, whylen, "%s", sd_bus_error_is_set(&error) ? error.message : strerror(-r));
	} else if (ret_reply) {
		*ret_reply = sd_bus_message_ref(reply);
	}
	sd_bus_error_free(&error);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	sd_bus_flush_close_unref(bus);
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
