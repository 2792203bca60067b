/*
 * alerts - webhook delivery of the alert outbox (see alerts.h).
 */
#include "ingest/alerts.h"

#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsonw.h"
#include "base/workpool.h"
#include "base/xalloc.h"
#include "log/log.h"

#define MAX_RETRY_MS (3600u * 1000u)

/* One delivery in flight: its libcurl handle and what recording its outcome needs. */
typedef struct {
    CURL *h;
    struct curl_slist *hdrs;
    buf body;                    /* the POST body; libcurl reads it until the transfer ends */
    char *id, *claim, *url, *kind;   /* owned copies of the claimed event's */
    int attempts;                /* tries before this one */
    bool last_chance;
    char detail[CURL_ERROR_SIZE];    /* libcurl's own words on a failure (ERRORBUFFER) */
} flight;

/* A finished delivery whose outcome is not written yet; strings owned. */
typedef struct {
    char *id, *claim, *error;
    store_alert_result result;
    unsigned retry_ms;
} outcome;

struct alerts {
    alerts_options o;
    char *public_url;
    store *s;
    CURLM *multi;       /* every delivery in flight; used by the delivery thread only, except
                         * curl_multi_wakeup (alerts_stop) */
    flight **flights;   /* o.max_flights slots, nflights used */
    size_t nflights;
    outcome *done;      /* finished, not yet recorded: at most o.max_flights (no claim is made
                         * while any wait) */
    size_t ndone;
    workpool *thread;   /* the one delivery thread; NULL until alerts_start */
};

/* ---- rules ----------------------------------------------------------------------------- */

err_code alerts_rule_check(store_alert_rule *r, char secret_buf[65], const char **field,
                           err_info *err)
{
    static const char *const KINDS[] = {"new_issue", "regression", "spike", "crash_free",
                                        "new_callsite"};
    bool known = false;
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        known |= r->kind && strcmp(r->kind, KINDS[i]) == 0;
    *field = NULL;
    if (!known) {
        *field = "kind";
        return err_set(err, ERR_INVALID, "kind: one of new_issue, regression, spike, crash_free, "
                       "new_callsite, not \"%.40s\"", r->kind ? r->kind : "");
    }
    if (r->url == NULL || (strncmp(r->url, "http://", 7) != 0 && strncmp(r->url, "https://", 8) != 0) ||
        strlen(r->url) > 2000) {
        *field = "url";
        return err_set(err, ERR_INVALID, "url: an http:// or https:// URL of at most 2000 bytes");
    }
    bool spike = strcmp(r->kind, "spike") == 0, cf = strcmp(r->kind, "crash_free") == 0;
    if (!spike && !cf && (!isnan(r->threshold) || r->min_count >= 0)) {
        *field = isnan(r->threshold) ? "min_count" : "threshold";
        return err_set(err, ERR_INVALID, "%s: only spike and crash_free rules take one", *field);
    }
    if (spike && isnan(r->threshold))
        r->threshold = 3;
    if (spike && r->min_count < 0)
        r->min_count = 10;
    if (cf && isnan(r->threshold))
        r->threshold = 0.99;
    if (cf && r->min_count < 0)
        r->min_count = 100;
    if ((spike && !(r->threshold >= 1 && r->threshold <= 1e6)) ||
        (cf && !(r->threshold > 0 && r->threshold <= 1))) {
        *field = "threshold";
        return err_set(err, ERR_INVALID, spike ? "threshold: a multiple of the hourly mean from 1"
                       : "threshold: a crash-free fraction in (0, 1]");
    }
    if ((spike || cf) && r->min_count < 1) {
        *field = "min_count";
        return err_set(err, ERR_INVALID, "min_count: at least 1");
    }
    if (r->secret == NULL || r->secret[0] == '\0') {
        uint8_t raw[32];
        if (RAND_bytes(raw, sizeof raw) != 1)
            return err_set(err, ERR_INTERNAL, "secret: no random bytes");
        for (int i = 0; i < 32; i++)
            snprintf(secret_buf + 2 * i, 3, "%02x", raw[i]);
        r->secret = secret_buf;
    } else if (strlen(r->secret) < 16 || strlen(r->secret) > 256) {
        *field = "secret";
        return err_set(err, ERR_INVALID, "secret: 16 to 256 bytes");
    }
    return ERR_OK;
}

/* ---- the body -------------------------------------------------------------------------- */

void alerts_signature(char out[72], const char *secret, const void *body, size_t len)
{
    uint8_t md[32];
    unsigned n = sizeof md;
    HMAC(EVP_sha256(), secret, (int)strlen(secret), body, len, md, &n);
    memcpy(out, "sha256=", 7);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

static const char *jget_str(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static double jget_num(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(json_object_get(o, a), b);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Slack's mrkdwn reserves &, < and >. */
static void slack_escape(buf *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '&')
            buf_append_str(out, "&amp;");
        else if (*s == '<')
            buf_append_str(out, "&lt;");
        else if (*s == '>')
            buf_append_str(out, "&gt;");
        else
            buf_putc(out, *s);
    }
}

/* The one-line summary a chat shows, with the link as <url|label>. */
static void slack_text(buf *t, const store_alert_due *e, json_t *p, const char *link)
{
    const char *title = jget_str(p, "issue", "title");
    const char *culprit = jget_str(p, "issue", "culprit");
    const char *app = jget_str(p, "issue", "app");
    if (strcmp(e->kind, "new_issue") == 0) {
        buf_append_str(t, "New issue");
        if (app && app[0]) {
            buf_append_str(t, " in ");
            slack_escape(t, app);
        }
        buf_append_str(t, ": *");
        slack_escape(t, title);
        buf_append_str(t, "*");
    } else if (strcmp(e->kind, "regression") == 0) {
        buf_append_str(t, "Regression: *");
        slack_escape(t, title);
        buf_append_str(t, "* is back");
        const char *fixed = jget_str(p, "resolved_in", NULL);
        if (fixed) {
            buf_append_str(t, " after it was resolved in ");
            slack_escape(t, fixed);
        }
    } else if (strcmp(e->kind, "spike") == 0) {
        buf_printf(t, "Spike: *");
        slack_escape(t, title);
        buf_printf(t, "*: %.0f reports this hour (%.2f an hour over the last 7 days)",
                   jget_num(p, "spike", "count"), jget_num(p, "spike", "hourly_mean"));
    } else if (strcmp(e->kind, "crash_free") == 0) {
        buf_append_str(t, "Crash-free sessions of *");
        slack_escape(t, jget_str(p, "release", "release"));
        buf_printf(t, "* at %.2f%%, below %.2f%% (%.0f sessions)",
                   100 * jget_num(p, "release", "crash_free_sessions"),
                   100 * jget_num(p, "release", "threshold"), jget_num(p, "release", "sessions"));
    } else {
        buf_append_str(t, "New privacy-API call site in build ");
        slack_escape(t, jget_str(p, "callsite", "build"));
        buf_append_str(t, ": *");
        slack_escape(t, jget_str(p, "callsite", "tag"));
        buf_append_str(t, "*");
        json_t *f0 = json_array_get(json_object_get(json_object_get(p, "callsite"), "frames"), 0);
        if (json_is_string(json_object_get(f0, "function"))) {
            buf_append_str(t, " from ");
            slack_escape(t, json_string_value(json_object_get(f0, "function")));
        }
    }
    if (culprit && culprit[0]) {
        buf_append_str(t, " at ");
        slack_escape(t, culprit);
    }
    buf_printf(t, " <%s|open in stacksift>", link);
}

void alerts_body(buf *out, const store_alert_due *e, const char *public_url)
{
    json_t *p = json_loads(e->payload_json ? e->payload_json : "{}", 0, NULL);
    if (!json_is_object(p)) {
        json_decref(p);
        p = json_object();
    }
    buf link, text;
    buf_init(&link);
    buf_init(&text);
    json_t *issue = json_object_get(p, "issue");
    json_t *release = json_object_get(p, "release");
    if (issue)
        buf_printf(&link, "%s/#/issues/%lld", public_url,
                   (long long)json_integer_value(json_object_get(issue, "id")));
    else if (release) {
        /* the release in the hash route, percent-encoded */
        buf_printf(&link, "%s/#/releases/", public_url);
        for (const char *c = jget_str(p, "release", "release"); c && *c; c++) {
            if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
                strchr("-_.~", *c))
                buf_putc(&link, *c);
            else
                buf_printf(&link, "%%%02X", (unsigned char)*c);
        }
    } else
        buf_printf(&link, "%s/#/privacy", public_url);
    buf_putc(&link, '\0');
    slack_text(&text, e, p, (const char *)link.data);
    buf_putc(&text, '\0');

    jsonw w;
    jsonw_init(&w, out);
    jsonw_object_begin(&w);
    jsonw_kstr(&w, "id", e->id);
    jsonw_kstr(&w, "event", e->kind);
    jsonw_key(&w, "project");
    jsonw_object_begin(&w);
    jsonw_kint(&w, "id", e->project_id);
    jsonw_object_end(&w);
    jsonw_key(&w, "rule");
    jsonw_object_begin(&w);
    jsonw_kint(&w, "id", e->rule_id);
    jsonw_kstr(&w, "kind", e->kind);
    jsonw_object_end(&w);
    jsonw_kstr(&w, "created_at", e->created_at);
    jsonw_kstr(&w, "link", (const char *)link.data);
    const char *key;
    json_t *v;
    json_object_foreach(p, key, v) {
        char *raw = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (raw)
            jsonw_kraw(&w, key, raw);
        free(raw);
    }
    jsonw_kstr(&w, "text", (const char *)text.data);
    jsonw_object_end(&w);
    buf_reset(&link);
    buf_reset(&text);
    json_decref(p);
}

/* ---- delivery -------------------------------------------------------------------------- */

static size_t discard(char *ptr, size_t size, size_t n, void *ctx)
{
    (void)ptr, (void)ctx;
    return size * n;
}

static unsigned retry_ms(const alerts *a, int attempts)
{
    uint64_t ms = a->o.retry_base_ms;
    for (int i = 0; i < attempts && ms < MAX_RETRY_MS; i++)
        ms *= 2;
    return ms > MAX_RETRY_MS ? MAX_RETRY_MS : (unsigned)ms;
}

/* How long a claim keeps other nodes off its events: longer than a delivery can take (the
 * request's timeout) and the recording after it, with room for a slow database. */
static unsigned lease_ms(const alerts *a)
{
    uint64_t ms = 2 * (uint64_t)a->o.timeout_ms + 10000;
    return ms > 0x7fffffffu ? 0x7fffffffu : (unsigned)ms;
}

static void add_outcome(alerts *a, const char *id, const char *claim, store_alert_result result,
                        const char *error, unsigned retry)
{
    outcome *o = &a->done[a->ndone++];
    o->id = xstrdup(id);
    o->claim = xstrdup(claim);
    o->error = error ? xstrdup(error) : NULL;
    o->result = result;
    o->retry_ms = retry;
}

static void flight_free(flight *f)
{
    if (f == NULL)
        return;
    curl_easy_cleanup(f->h);
    curl_slist_free_all(f->hdrs);
    buf_reset(&f->body);
    free(f->id);
    free(f->claim);
    free(f->url);
    free(f->kind);
    free(f);
}

static void log_outcome(const char *id, const char *kind, int attempts, bool ok,
                        bool last_chance, const char *why)
{
    if (ok)
        log_event(LOG_INFO, "alert_delivered", "id=%s kind=%s attempts=%d", id, kind,
                  attempts + 1);
    else
        log_event(last_chance ? LOG_ERROR : LOG_WARN, last_chance ? "alert_failed" : "alert_retry",
                  "id=%s kind=%s attempts=%d message=%s", id, kind, attempts + 1, why);
}

/* Start POSTing claimed event `e` (signed body, libcurl handle added to the multi). A handle
 * that cannot start is an attempt that failed at once. */
static void flight_start(alerts *a, const store_alert_due *e)
{
    flight *f = xcalloc(1, sizeof *f);
    char sig[72], hdr_sig[128], hdr_id[96];
    buf_init(&f->body);
    alerts_body(&f->body, e, a->public_url);
    alerts_signature(sig, e->secret, f->body.data, f->body.len);
    snprintf(hdr_sig, sizeof hdr_sig, "X-Stacksift-Signature: %s", sig);
    snprintf(hdr_id, sizeof hdr_id, "X-Stacksift-Event: %s", e->id);
    f->id = xstrdup(e->id);
    f->claim = xstrdup(e->claim);
    f->url = xstrdup(e->url);
    f->kind = xstrdup(e->kind);
    f->attempts = e->attempts;
    f->last_chance = e->last_chance;
    f->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    f->hdrs = curl_slist_append(f->hdrs, hdr_sig);
    f->hdrs = curl_slist_append(f->hdrs, hdr_id);
    f->hdrs = curl_slist_append(f->hdrs, "User-Agent: stacksift-alerts");
    f->h = curl_easy_init();
    CURLMcode mc = CURLM_OK;
    if (f->h != NULL) {
        curl_easy_setopt(f->h, CURLOPT_URL, f->url);
        curl_easy_setopt(f->h, CURLOPT_POST, 1L);
        curl_easy_setopt(f->h, CURLOPT_POSTFIELDS, (const char *)f->body.data);
        curl_easy_setopt(f->h, CURLOPT_POSTFIELDSIZE, (long)f->body.len);
        curl_easy_setopt(f->h, CURLOPT_HTTPHEADER, f->hdrs);
        curl_easy_setopt(f->h, CURLOPT_TIMEOUT_MS, (long)a->o.timeout_ms);
        curl_easy_setopt(f->h, CURLOPT_CONNECTTIMEOUT_MS, (long)a->o.timeout_ms);
        curl_easy_setopt(f->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(f->h, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(f->h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(f->h, CURLOPT_ERRORBUFFER, f->detail);
        curl_easy_setopt(f->h, CURLOPT_PRIVATE, f);
        mc = curl_multi_add_handle(a->multi, f->h);
    }
    if (f->h == NULL || mc != CURLM_OK) {
        const char *why = f->h == NULL ? "libcurl: no handle" : curl_multi_strerror(mc);
        add_outcome(a, f->id, f->claim, f->last_chance ? STORE_ALERT_FAILED : STORE_ALERT_RETRY,
                    why, retry_ms(a, f->attempts));
        log_outcome(f->id, f->kind, f->attempts, false, f->last_chance, why);
        flight_free(f);
        return;
    }
    a->flights[a->nflights++] = f;
}

/* Take flights[i] out of the multi and the table (the last one moves into its slot). */
static flight *flight_remove(alerts *a, size_t i)
{
    flight *f = a->flights[i];
    curl_multi_remove_handle(a->multi, f->h);
    a->flights[i] = a->flights[--a->nflights];
    return f;
}

/* Every transfer libcurl reports done becomes an outcome: a 2xx answer delivers the event;
 * anything else (refused, timeout, 3xx-5xx) is retried retry_ms from now, or given up on its
 * last chance. Returns how many finished. */
static size_t collect(alerts *a)
{
    size_t finished = 0;
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(a->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURLcode cc = m->data.result;
        size_t i = 0;
        while (i < a->nflights && a->flights[i]->h != m->easy_handle)
            i++;
        if (i == a->nflights)
            continue;   /* not ours: cannot happen, every handle in the multi is a flight */
        /* m points into the multi's list: done with it before the handle is removed */
        flight *f = flight_remove(a, i);
        long status = 0;
        curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &status);
        char why[CURL_ERROR_SIZE + 32] = "";
        if (cc != CURLE_OK)
            snprintf(why, sizeof why, "%s", f->detail[0] ? f->detail : curl_easy_strerror(cc));
        else if (status < 200 || status > 299)
            snprintf(why, sizeof why, "HTTP %ld", status);
        bool ok = why[0] == '\0';
        add_outcome(a, f->id, f->claim, ok ? STORE_ALERT_DELIVERED
                    : f->last_chance ? STORE_ALERT_FAILED : STORE_ALERT_RETRY,
                    ok ? NULL : why, retry_ms(a, f->attempts));
        log_outcome(f->id, f->kind, f->attempts, ok, f->last_chance, why);
        flight_free(f);
        finished++;
    }
    return finished;
}

/* Stopping: deliveries still in flight are cut off and released (due again at once, for any
 * node, with no attempt counted). */
static void release_all(alerts *a)
{
    while (a->nflights) {
        flight *f = flight_remove(a, a->nflights - 1);
        add_outcome(a, f->id, f->claim, STORE_ALERT_RELEASED, NULL, 0);
        log_event(LOG_WARN, "alert_released", "id=%s kind=%s message=%s", f->id, f->kind,
                  "the node stopped before the receiver answered");
        flight_free(f);
    }
}

/* Write the finished outcomes; false (kept for another try) if the database failed. */
static bool record(alerts *a)
{
    if (a->ndone == 0)
        return true;
    store_alert_outcome *o = xcalloc(a->ndone, sizeof *o);
    for (size_t i = 0; i < a->ndone; i++)
        o[i] = (store_alert_outcome){a->done[i].id, a->done[i].claim, a->done[i].result,
                                     a->done[i].error, a->done[i].retry_ms};
    size_t written = 0;
    err_info err = {0};
    err_code rc = store_alert_record(&written, a->s, o, a->ndone, &err);
    free(o);
    if (rc != ERR_OK) {
        log_event(LOG_WARN, "alerts_record_failed", "outcomes=%zu message=%s", a->ndone, err.msg);
        return false;
    }
    if (written < a->ndone)   /* their leases lapsed: another claim owns them now */
        log_event(LOG_WARN, "alerts_claims_lapsed", "outcomes=%zu recorded=%zu", a->ndone,
                  written);
    for (size_t i = 0; i < a->ndone; i++) {
        free(a->done[i].id);
        free(a->done[i].claim);
        free(a->done[i].error);
    }
    a->ndone = 0;
    return true;
}

/* Claim up to `want` due events, each URL up to its free slots (per_url less the
 * deliveries in flight to it), and start delivering them. Returns events claimed. */
static size_t claim(alerts *a, size_t want)
{
    buf busy;
    jsonw w;
    buf_init(&busy);
    jsonw_init(&w, &busy);
    jsonw_object_begin(&w);
    for (size_t i = 0; i < a->nflights; i++) {
        size_t j = 0, k = 0;
        while (j < i && strcmp(a->flights[j]->url, a->flights[i]->url) != 0)
            j++;
        if (j < i)
            continue;   /* counted at its first flight */
        for (j = i; j < a->nflights; j++)
            k += strcmp(a->flights[j]->url, a->flights[i]->url) == 0;
        jsonw_kint(&w, a->flights[i]->url, (int64_t)k);
    }
    jsonw_object_end(&w);
    buf_putc(&busy, '\0');
    arena *ar = arena_new(8u << 20);
    err_info err = {0};
    store_alert_due *ev;
    size_t n;
    if (store_alert_claim(&ev, &n, a->s, (unsigned)want, a->o.per_url, (const char *)busy.data,
                          lease_ms(a), a->o.give_up_s, ar, &err) != ERR_OK) {
        log_event(LOG_WARN, "alerts_claim_failed", "message=%s", err.msg);
        n = 0;
    }
    for (size_t i = 0; i < n; i++)
        flight_start(a, &ev[i]);
    arena_free(ar);
    buf_reset(&busy);
    return n;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The delivery thread (workpool_fn). One loop drives every delivery in flight (libcurl
 * multi): it claims due events whenever slots are free (at once after a delivery finishes or
 * a claim came back full, else every poll_ms), records outcomes as transfers finish, runs the
 * spike sweep every sweep_s, and waits in curl_multi_poll (or workpool_wait when idle). On
 * stop it claims nothing more, lets deliveries in flight run up to stop_ms, releases the
 * rest and records what it can. */
static void run(workpool *wp, unsigned index, void *vctx)
{
    alerts *a = vctx;
    (void)index;
    double now = mono_s();
    double next_sweep = now, next_claim = now, next_record = now, stop_by = -1;
    for (;;) {
        if (a->nflights) {
            int running = 0;
            curl_multi_perform(a->multi, &running);
            if (collect(a))
                next_claim = 0;   /* slots freed: more may be due for those URLs */
        }
        now = mono_s();
        bool stopping = workpool_stopping(wp);
        if (stopping && stop_by < 0)
            stop_by = now + a->o.stop_ms / 1000.0;
        if (stopping && a->nflights && now >= stop_by)
            release_all(a);
        if (stopping && a->nflights == 0) {
            /* one last try: outcomes left unwritten leave leases that lapse on their own */
            record(a);
            break;
        }
        if (a->ndone && now >= next_record && !record(a))
            next_record = now + a->o.poll_ms / 1000.0;
        if (!stopping && a->o.sweep_s && now >= next_sweep) {
            int64_t made = 0;
            err_info err = {0};
            if (store_alert_sweep_spikes(&made, a->s, &err) != ERR_OK)
                log_event(LOG_WARN, "alerts_sweep_failed", "message=%s", err.msg);
            else if (made)
                log_event(LOG_INFO, "alerts_spikes", "events=%lld", (long long)made);
            next_sweep = mono_s() + a->o.sweep_s;
        }
        if (!stopping && a->ndone == 0 && a->nflights < a->o.max_flights && now >= next_claim) {
            size_t want = a->o.max_flights - a->nflights;
            size_t got = claim(a, want);
            /* a full claim may have left events due; otherwise poll again later (a finished
             * delivery also brings the next claim forward) */
            next_claim = got == want ? 0 : mono_s() + a->o.poll_ms / 1000.0;
            if (got)
                continue;   /* start the new transfers before waiting */
        }
        /* sleep until the next thing to do, at most poll_ms */
        now = mono_s();
        double until = now + a->o.poll_ms / 1000.0;
        if (!stopping && a->ndone == 0 && a->nflights < a->o.max_flights && next_claim < until)
            until = next_claim;
        if (!stopping && a->o.sweep_s && next_sweep < until)
            until = next_sweep;
        if (a->ndone && next_record < until)
            until = next_record;
        if (stopping && stop_by < until)
            until = stop_by;
        int ms = until > now ? (int)((until - now) * 1000) + 1 : 0;
        if (a->nflights)
            curl_multi_poll(a->multi, NULL, 0, ms, NULL);   /* wakes on any transfer's
                                                             * progress and libcurl's timers */
        else if (!stopping && ms > 0)
            workpool_wait(wp, (unsigned)ms);
    }
}

err_code alerts_new(alerts **out, store *s, const alerts_options *o, err_info *err)
{
    *out = NULL;
    /* once per process, before any thread uses libcurl (curl_global_init is not
     * thread-safe); repeated calls only count */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return err_set(err, ERR_INTERNAL, "alerts: libcurl did not initialize");
    CURLM *multi = curl_multi_init();
    if (multi == NULL) {
        curl_global_cleanup();
        return err_set(err, ERR_INTERNAL, "alerts: libcurl multi handle did not start");
    }
    alerts *a = xcalloc(1, sizeof *a);
    a->o = *o;
    if (a->o.poll_ms == 0)
        a->o.poll_ms = 1000;
    if (a->o.per_url == 0)
        a->o.per_url = 4;
    if (a->o.max_flights == 0)
        a->o.max_flights = 64;
    a->public_url = xstrdup(o->public_url ? o->public_url : "");
    size_t len = strlen(a->public_url);
    while (len > 0 && a->public_url[len - 1] == '/')
        a->public_url[--len] = '\0';
    a->s = s;
    a->multi = multi;
    a->flights = xcalloc(a->o.max_flights, sizeof *a->flights);
    a->done = xcalloc(a->o.max_flights, sizeof *a->done);
    *out = a;
    return ERR_OK;
}

err_code alerts_start(alerts *a, err_info *err)
{
    if (a->thread != NULL)
        return ERR_OK;
    return workpool_start(&a->thread, 1, run, a, err);
}

void alerts_stop(alerts *a)
{
    if (a == NULL || a->thread == NULL)
        return;
    workpool_stop(a->thread);
    curl_multi_wakeup(a->multi);   /* out of curl_multi_poll, if it is in it */
}

void alerts_free(alerts *a)
{
    if (a == NULL)
        return;
    alerts_stop(a);
    workpool_free(a->thread);   /* deliveries in flight finish, or are released after stop_ms */
    for (size_t i = 0; i < a->nflights; i++) {   /* none unless the thread never ran */
        curl_multi_remove_handle(a->multi, a->flights[i]->h);
        flight_free(a->flights[i]);
    }
    for (size_t i = 0; i < a->ndone; i++) {
        free(a->done[i].id);
        free(a->done[i].claim);
        free(a->done[i].error);
    }
    curl_multi_cleanup(a->multi);
    free(a->flights);
    free(a->done);
    free(a->public_url);
    free(a);
    curl_global_cleanup();
}
