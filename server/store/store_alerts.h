/*
 * store_alerts - alert rules and the outbox of alert events (migration 0011). Events are
 * made in the transactions that cause them (triggers, the sessions batch, the spike sweep);
 * this file lists and edits rules, leases due events for delivery (FOR UPDATE SKIP LOCKED,
 * then a lease with a claim token: any node, never two at once) and records each delivery's
 * outcome.
 */
#ifndef STACKSIFT_STORE_STORE_ALERTS_H
#define STACKSIFT_STORE_STORE_ALERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

/* One rule; strings in the caller's arena (list) or borrowed (add). */
typedef struct {
    int64_t id;
    int64_t project_id;
    const char *kind;        /* new_issue | regression | spike | crash_free | new_callsite */
    const char *url;
    const char *secret;      /* list: "" (never shown again) */
    double threshold;        /* NAN = none */
    int64_t min_count;       /* -1 = none */
    const char *created_at;
    int64_t pending, delivered, failed;   /* its events (list only) */
} store_alert_rule;

/* store_alert_rule_add - insert `r` (id, created_at and counts ignored); *id = the new id.
 * Errors ERR_INTERNAL (a value the database refused), ERR_STORE. */
err_code store_alert_rule_add(int64_t *id, store *s, const store_alert_rule *r, err_info *err);

/* store_alert_rules_list - every rule of `project_id` (0 = all), oldest first, with its
 * event counts. *rows in `a`. Errors ERR_STORE. */
err_code store_alert_rules_list(store_alert_rule **rows, size_t *n, store *s, int64_t project_id,
                                arena *a, err_info *err);

/* store_alert_rule_remove - delete rule `id` and its events. Errors ERR_NOT_FOUND, ERR_STORE. */
err_code store_alert_rule_remove(store *s, int64_t id, err_info *err);

/* One event as listed (the dashboard's failed deliveries). */
typedef struct {
    const char *id;          /* uuid */
    int64_t rule_id, project_id;
    const char *kind, *cause, *status, *last_error, *created_at;
    int attempts;
} store_alert_event;

/* store_alert_events_list - the newest `limit` events with `status` ("failed", "pending",
 * "delivered"; NULL = any) of `project_id` (0 = all). Errors ERR_STORE. */
err_code store_alert_events_list(store_alert_event **rows, size_t *n, store *s,
                                 int64_t project_id, const char *status, unsigned limit,
                                 arena *a, err_info *err);

/* ---- delivery -------------------------------------------------------------------------- */

/* A due event claimed for delivery, with what delivering it needs; strings in the claim's
 * arena. */
typedef struct {
    const char *id;            /* uuid, the webhook's `id` */
    int64_t rule_id, project_id;
    const char *kind, *url, *secret;
    const char *payload_json;  /* the facts (object) */
    const char *created_at;
    int attempts;              /* tries before this one */
    bool last_chance;          /* created more than give_up_s ago: fail if this try fails */
    const char *claim;         /* uuid of this claim: its outcome is recorded only while the
                                * event still carries it (store_alert_record) */
} store_alert_due;

/* store_alert_claim - lease due pending events (next_at <= now) for delivery, in one
 * autocommitted statement, so that no transaction stays open while receivers answer. Webhook
 * URLs are served side by side: at most `per_url` events of one URL less the ones
 * `busy_json` says this node already has in flight to it (an object {"<url>": count, ...};
 * "{}" = none), oldest due first within a URL, at most `max` in all. Rows another node is
 * claiming are skipped (FOR UPDATE SKIP LOCKED); each claimed event gets a fresh claim token,
 * claimed_by = this connection's application_name (the node) and next_at = now + lease_ms,
 * so no node takes it again until the lease lapses: a node that dies mid-delivery leaves
 * its events to fall due then, with the same id. `give_up_s` marks events older than that
 * as last_chance. *events in `a`, *n = 0 when nothing is due. Errors ERR_STORE,
 * ERR_TOO_LARGE (arena). */
err_code store_alert_claim(store_alert_due **events, size_t *n, store *s, unsigned max,
                           unsigned per_url, const char *busy_json, unsigned lease_ms,
                           unsigned give_up_s, arena *a, err_info *err);

/* What became of one claimed event. */
typedef enum {
    STORE_ALERT_DELIVERED,   /* a 2xx answer */
    STORE_ALERT_RETRY,       /* failed: pending again, due retry_ms after the recording */
    STORE_ALERT_FAILED,      /* failed on its last chance: given up */
    STORE_ALERT_RELEASED,    /* not tried to the end (the node is stopping): due at once, no
                              * attempt counted */
} store_alert_result;

/* One outcome to record; strings borrowed. */
typedef struct {
    const char *id, *claim;    /* the event and the token its claim got */
    store_alert_result result;
    const char *error;         /* RETRY, FAILED: why (last_error); else NULL */
    unsigned retry_ms;         /* RETRY: delay from now, the time of recording */
} store_alert_outcome;

/* store_alert_record - write `n` outcomes in one statement; every delay counts from now, the
 * time of the recording (after the attempt), not from the claim. An outcome whose event no
 * longer carries its claim token (the lease lapsed and another node claimed it, or its rule
 * was deleted) is skipped: the newer claim owns the event. *recorded = outcomes written.
 * Errors ERR_STORE. */
err_code store_alert_record(size_t *recorded, store *s, const store_alert_outcome *o, size_t n,
                            err_info *err);

/* store_alert_sweep_spikes - make the events of spike rules: an issue whose reports in the
 * current UTC hour number at least the rule's min_count and more than threshold times its
 * hourly mean over the 7 days before that hour; one event per (rule, issue, hour).
 * *made = events made now. Errors ERR_STORE. */
err_code store_alert_sweep_spikes(int64_t *made, store *s, err_info *err);

#endif
