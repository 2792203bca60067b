/*
 * alerts - delivery of alert events by webhook (the outbox of migration 0011), and the rule
 * checks shared by the API and the CLI.
 *
 * Every node runs one delivery thread: it claims due events (store_alert_claim_begin: FOR
 * UPDATE SKIP LOCKED, so two nodes never send one event at the same time), POSTs each to its
 * rule's URL and records the outcome in the same transaction. The body is
 *   {"id", "event", "project": {"id"}, "rule": {"id", "kind"}, "created_at", "link",
 *    "issue" | "callsite" | "release" (+ "spike"), "text"}
 * with `text` Slack-compatible (an incoming webhook shows it), signed
 * `X-Stacksift-Signature: sha256=<hex HMAC-SHA256(rule secret, body)>`; also
 * `X-Stacksift-Event: <id>`. A 2xx answer delivers it; anything else (refused, timeout,
 * 3xx-5xx) retries after retry_base_ms * 2^attempts (capped at an hour) until the event is
 * give_up_s old (24 h), then it is marked failed (GET /api/v1/alerts, the dashboard).
 * At-least-once: a node killed mid-delivery leaves the event pending (its transaction rolls
 * back) and the same id is sent again; a receiver dedupes by `id`.
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
    unsigned batch;          /* events claimed per transaction */
    const char *public_url;  /* dashboard links: "<public_url>/#/issues/7"; copied */
} alerts_options;

/* alerts_new - a stopped delivery thread using `s` (one pooled connection while it works).
 * Owned by the caller: alerts_free(). Errors ERR_INTERNAL (libcurl could not start). */
err_code alerts_new(alerts **out, store *s, const alerts_options *o, err_info *err);

/* alerts_start - start the thread. Errors ERR_INTERNAL. */
err_code alerts_start(alerts *a, err_info *err);

/* alerts_free - stop and join (a delivery in flight finishes or times out first); NULL ok. */
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
