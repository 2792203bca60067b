/*
 * store_alerts - alert rules and the outbox of alert events (migration 0011). Events are
 * made in the transactions that cause them (triggers, the sessions batch, the spike sweep);
 * this file lists and edits rules, claims due events for delivery (FOR UPDATE SKIP LOCKED:
 * any node, never two at once) and records each delivery's outcome.
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
 * Errors ERR_INVALID (a value the database refused), ERR_STORE. */
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

/* A due event with what delivering it needs; strings in the claim's arena. */
typedef struct {
    const char *id;            /* uuid, the webhook's `id` */
    int64_t rule_id, project_id;
    const char *kind, *url, *secret;
    const char *payload_json;  /* the facts (object) */
    const char *created_at;
    int attempts;              /* tries before this one */
    bool last_chance;          /* created more than give_up_s ago: fail if this try fails */
} store_alert_due;

typedef struct store_alert_claim store_alert_claim;

/* store_alert_claim_begin - in a new transaction on a pooled connection, lock up to `max` due
 * pending events (next_at <= now, oldest first, SKIP LOCKED: another node's claim is left
 * alone). `give_up_s` marks events older than that as last_chance. The locks hold until
 * store_alert_claim_end, so no other node delivers them meanwhile; if this process dies, the
 * transaction is rolled back and they stay pending with the same id.
 * *claim is NULL when nothing is due. Errors ERR_STORE. */
err_code store_alert_claim_begin(store_alert_claim **claim, const store_alert_due **events,
                                 size_t *n, store *s, unsigned max, unsigned give_up_s,
                                 arena *a, err_info *err);

/* store_alert_claim_result - record the outcome of events[i]: delivered, or failed with
 * `error` (retried after retry_ms, or marked failed when last_chance). */
void store_alert_claim_result(store_alert_claim *c, size_t i, bool delivered, const char *error,
                              unsigned retry_ms);

/* store_alert_claim_end - write the outcomes and commit (commit = false: roll back, the
 * events stay as they were). Frees `c`. Errors ERR_STORE. */
err_code store_alert_claim_end(store_alert_claim *c, bool commit, err_info *err);

/* store_alert_sweep_spikes - make the events of spike rules: an issue whose reports in the
 * current UTC hour number at least the rule's min_count and more than threshold times its
 * hourly mean over the 7 days before that hour; one event per (rule, issue, hour).
 * *made = events made now. Errors ERR_STORE. */
err_code store_alert_sweep_spikes(int64_t *made, store *s, err_info *err);

#endif
