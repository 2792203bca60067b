/*
 * alerts - delivery of alert events by webhook (the outbox of migration 0011), and the rule
 * checks shared by the API and the CLI.
 *
 * Every node runs one delivery thread that keeps many deliveries in flight at once (libcurl
 * multi): it leases due events (store_alert_claim: FOR UPDATE SKIP LOCKED, then a claim token
 * and next_at moved a lease ahead, in one autocommitted statement, so no two nodes send one
 * event at the same time and no transaction stays open while receivers answer), POSTs them
 * side by side and records each outcome as its transfer ends (store_alert_record, only where
 * the event still carries its claim token). Each webhook URL gets at most per_url deliveries
 * in flight on a node, so a receiver that never answers holds its own slots for the timeout
 * and every other URL's events go out meanwhile. The body is
 *   {"id", "event", "project": {"id"}, "rule": {"id", "kind"}, "created_at", "link",
 *    "issue" | "callsite" | "release" (+ "spike"), "text"}
 * with `text` Slack-compatible (an incoming webhook shows it), signed
 * `X-Stacksift-Signature: sha256=<hex HMAC-SHA256(rule secret, body)>`; also
 * `X-Stacksift-Event: <id>`. A 2xx answer delivers it; anything else (refused, timeout,
 * 3xx-5xx) retries retry_base_ms * 2^attempts (capped at an hour) after that attempt ended,
 * until the event is give_up_s old (24 h), then it is marked failed (GET /api/v1/alerts, the
 * dashboard). At-least-once: a node killed mid-delivery leaves its events leased; they fall
 * due again when the lease lapses (twice timeout_ms plus 10 s after the claim) and the same
 * id is sent again by any node; a receiver dedupes by `id`. A node that stops (SIGTERM) lets
 * deliveries in flight run up to stop_ms, then releases the rest (due again at once, no
 * attempt counted).
 * The spike sweep runs on the same thread every sweep_s (store_alert_sweep_spikes).
 */
#ifndef STACKSIFT_INGEST_ALERTS_H
#define STACKSIFT_INGEST_ALERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "store/store.h"
#include "store/store_alerts.h"

typedef struct alerts alerts;

typedef struct {
    unsigned poll_ms;        /* how often an idle thread looks for due events */
    unsigned retry_base_ms;  /* first retry delay; doubles per attempt, at most an hour */
    unsigned give_up_s;      /* an event this old that fails once more is marked failed */
    unsigned timeout_ms;     /* one webhook request, connect included */
    unsigned sweep_s;        /* spike sweep period; 0 = never */
    unsigned per_url;        /* deliveries in flight to one webhook URL at most (0: 4) */
    unsigned max_flights;    /* deliveries in flight in all at most (0: 64) */
    unsigned stop_ms;        /* on stop, how long deliveries in flight may still run */
    const char *public_url;  /* dashboard links: "<public_url>/#/issues/7"; copied */
} alerts_options;

/* alerts_new - a stopped delivery thread using `s` (one pooled connection, for a statement at
 * a time).
 * Owned by the caller: alerts_free(). Errors ERR_INTERNAL (libcurl could not start). */
err_code alerts_new(alerts **out, store *s, const alerts_options *o, err_info *err);

/* alerts_start - start the thread. Errors ERR_INTERNAL. */
err_code alerts_start(alerts *a, err_info *err);

/* alerts_stop - ask the thread to stop (returns at once): it claims nothing more, and
 * deliveries in flight get up to stop_ms before they are released. NULL ok. */
void alerts_stop(alerts *a);

/* alerts_free - alerts_stop, join (at most stop_ms plus a statement or two), free; NULL ok. */
void alerts_free(alerts *a);

/* alerts_body - the webhook body of event `e` into `out` (appended). */
void alerts_body(buf *out, const store_alert_due *e, const char *public_url);

/* alerts_signature - "sha256=<64 hex>" of HMAC-SHA256(secret, body) into out[72]. */
void alerts_signature(char out[72], const char *secret, const void *body, size_t len);

/* alerts_rule_check - a rule as the API or CLI got it: kind known, url http(s)://, threshold
 * and min_count in range for the kind (defaults filled in: spike 3x and 10 reports,
 * crash_free 0.99 and 100 sessions), a secret generated when none is given (`secret_buf`
 * holds it). `field` names the bad field. Errors ERR_INVALID. */
err_code alerts_rule_check(store_alert_rule *r, char secret_buf[65], const char **field,
                           err_info *err);

#endif
