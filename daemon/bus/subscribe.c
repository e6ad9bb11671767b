/* SPDX-License-Identifier: GPL-2.0-only */
/* subscribe.c -- who hears pdimond's step signals: subscribers, and signals sent to each of
 * them alone.
 *
 * A step's name and its end say what a user runs and when, so a step signal is never
 * broadcast, where every connection of the bus could match it: a client calls Subscribe,
 * and each signal about a step goes unicast (its destination set) to every subscriber
 * allowed to read that step (pdi_may_read, judged when the signal is sent). A subscriber
 * stays until its connection leaves the bus (sd_bus_track). Bounded: PDI_BUS_MAX_SUBSCRIBERS
 * in all and PDI_BUS_MAX_SUBSCRIBERS_PER_UID per uid; a refusal is one rate-limited line. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "access.h"
#include "bus_names.h"
#include "daemon.h"
#include "log.h"
#include "subscribe.h"

struct subscriber {
	char *name;          /* its unique bus name */
	uid_t uid;
	sd_bus_track *track; /* tells us when it leaves */
	struct pdi_daemon *d;
};

struct pdi_subscribers {
	struct subscriber *v[PDI_BUS_MAX_SUBSCRIBERS];
	unsigned n;
};

static void subscriber_free(struct subscriber *s)
{
	sd_bus_track_unref(s->track);
	free(s->name);
	free(s);
}

/* S's connection left the bus. */
static int on_gone(sd_bus_track *track, void *userdata)
{
	struct subscriber *s = userdata;
	struct pdi_subscribers *all = s->d->subscribers;

	(void)track;
	for (unsigned i = 0; all && i < all->n; i++)
		if (all->v[i] == s) {
			all->v[i] = all->v[--all->n];
			break;
		}
	subscriber_free(s);
	return 0;
}

int pdi_bus_subscribe(struct pdi_daemon *d, sd_bus_message *m, uid_t uid, sd_bus_error *error)
{
	struct pdi_subscribers *all = d->subscribers;
	const char *sender = sd_bus_message_get_sender(m);
	struct subscriber *s;
	unsigned mine = 0;
	int r;

	if (!sender)
		return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Subscribe needs a bus connection of its own");
	if (!all && !(all = d->subscribers = calloc(1, sizeof(*all))))
		return -ENOMEM;
	for (unsigned i = 0; i < all->n; i++) {
		if (!strcmp(all->v[i]->name, sender))
			return sd_bus_reply_method_return(m, ""); /* once is enough */
		mine += all->v[i]->uid == uid;
	}
	if (mine >= PDI_BUS_MAX_SUBSCRIBERS_PER_UID || all->n >= PDI_BUS_MAX_SUBSCRIBERS) {
		log_warning_limited(uid, "Refusing Subscribe from %s (uid %u): %u subscriptions of this uid, %u in all",
				    sender, (unsigned)uid, mine, all->n);
		return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
					 "Too many subscriptions (%u of this user, at most %u; %u in all, at most %u): "
					 "close an earlier subscriber's connection",
					 mine, PDI_BUS_MAX_SUBSCRIBERS_PER_UID, all->n, PDI_BUS_MAX_SUBSCRIBERS);
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(sender))) {
		free(s);
		return -ENOMEM;
	}
	s->uid = uid;
	s->d = d;
	r = sd_bus_track_new(d->bus, &s->track, on_gone, s);
	if (r >= 0)
		r = sd_bus_track_add_sender(s->track, m);
	if (r < 0) {
		subscriber_free(s);
		return r;
	}
	all->v[all->n++] = s;
	return sd_bus_reply_method_return(m, "");
}

void pdi_bus_subscribers_free(struct pdi_daemon *d)
{
	struct pdi_subscribers *all = d->subscribers;

	for (unsigned i = 0; all && i < all->n; i++)
		subscriber_free(all->v[i]);
	free(all);
	d->subscribers = NULL;
}

/* Signal MEMBER of TYPES (the arguments follow) to each subscriber who may read S, and to
 * nobody else. */
static void emit_to_readers(struct pdi_daemon *d, const struct pdi_step *s, const char *member, const char *types, ...)
{
	struct pdi_subscribers *all = d->subscribers;

	for (unsigned i = 0; d->bus && all && i < all->n; i++) {
		struct pdi_caller c = pdi_caller_of(d, all->v[i]->uid);
		sd_bus_message *m = NULL;
		va_list ap;
		int r;

		if (!pdi_may_read(&c, s))
			continue;
		r = sd_bus_message_new_signal(d->bus, &m, PDI_BUS_PATH, PDI_BUS_IFACE, member);
		if (r >= 0)
			r = sd_bus_message_set_destination(m, all->v[i]->name);
		if (r >= 0) {
			va_start(ap, types);
			r = sd_bus_message_appendv(m, types, ap);
			va_end(ap);
		}
		if (r >= 0)
			r = sd_bus_send(d->bus, m, NULL);
		sd_bus_message_unref(m);
		if (r < 0)
			log_warning_errno_limited(all->v[i]->uid, r, "Cannot send %s about step %s to %s, ignoring: %m",
						  member, s->name, all->v[i]->name);
	}
}

void pdi_bus_emit_step_ended(struct pdi_daemon *d, const struct pdi_step *s, const char *state)
{
	emit_to_readers(d, s, "StepEnded", "ss", s->name, state);
}

void pdi_bus_emit_step_health_changed(struct pdi_daemon *d, const struct pdi_step *s, const char *health,
				      const char *verdict_json)
{
	emit_to_readers(d, s, "StepHealthChanged", "sss", s->name, health, verdict_json);
}
