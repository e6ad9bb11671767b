/* SPDX-License-Identifier: GPL-2.0-only */
/* bus-listen.c -- a D-Bus client that listens for pdimond's StepEnded signals as any user
 * can: a match for them (so that it would hear a broadcast) and the Subscribe method (so
 * that it hears what pdimond sends it). Used by test_bus.py.
 *
 *   bus-listen SECONDS
 *
 * On DBUS_SYSTEM_BUS_ADDRESS's bus. Prints "subscribed" or "not subscribed: ERROR", then
 * "ready", then "StepEnded STEP STATE" per signal, each line flushed; exits after SECONDS
 * or when its standard input closes. It hears StepHealthChanged too (test_hang.py): "StepHealthChanged
 * STEP HEALTH VERDICT-JSON". */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	const char *step = NULL, *state = NULL;

	(void)userdata;
	(void)error;
	if (sd_bus_message_read(m, "ss", &step, &state) >= 0)
		printf("StepEnded %s %s\n", step, state);
	fflush(stdout);
	return 0;
}

static int on_health(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	const char *step = NULL, *health = NULL, *verdict = NULL;

	(void)userdata;
	(void)error;
	if (sd_bus_message_read(m, "sss", &step, &health, &verdict) >= 0)
		printf("StepHealthChanged %s %s %s\n", step, health, verdict);
	fflush(stdout);
	return 0;
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	long deadline = now_ms() + 1000L * (argc > 1 ? atol(argv[1]) : 30);
	sd_bus *bus = NULL;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	r = sd_bus_open_system(&bus);
	if (r < 0) {
		fprintf(stderr, "bus-listen: cannot connect: %s\n", strerror(-r));
		return 1;
	}
	r = sd_bus_match_signal(bus, NULL, NULL, "/org/pdimon/Monitor1", "org.pdimon.Monitor1", "StepEnded", on_signal,
				NULL);
	if (r >= 0)
		r = sd_bus_match_signal(bus, NULL, NULL, "/org/pdimon/Monitor1", "org.pdimon.Monitor1", "StepHealthChanged",
					on_health, NULL);
	if (r < 0) {
		fprintf(stderr, "bus-listen: cannot add the match: %s\n", strerror(-r));
		return 1;
	}
	r = sd_bus_call_method(bus, "org.pdimon.Monitor1", "/org/pdimon/Monitor1", "org.pdimon.Monitor1", "Subscribe",
			       &error, NULL, "");
	if (r < 0)
		printf("not subscribed: %s\n", error.message ? error.message : strerror(-r));
	else
		printf("subscribed\n");
	sd_bus_error_free(&error);
	printf("ready\n");
	while (now_ms() < deadline) {
		struct pollfd p[2];
		char c;

		while ((r = sd_bus_process(bus, NULL)) > 0)
			;
		if (r < 0) {
			fprintf(stderr, "bus-listen: %s\n", strerror(-r));
			break;
		}
		/* what to wait for, once everything queued is processed */
		p[0] = (struct pollfd){.fd = sd_bus_get_fd(bus), .events = (short)sd_bus_get_events(bus)};
		p[1] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
		if (poll(p, 2, (int)(deadline - now_ms() > 0 ? deadline - now_ms() : 0)) < 0 && errno != EINTR)
			break;
		if (p[1].revents && read(STDIN_FILENO, &c, 1) <= 0)
			break;
	}
	sd_bus_flush_close_unref(bus);
	return 0;
}
