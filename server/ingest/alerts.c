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

struct alerts {
    alerts_options o;
    char *public_url;
    store *s;
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

/* POST `body`; true on 2xx, else `why` says what happened. */
static bool post(const alerts *a, const store_alert_due *e, const buf *body, char why[200])
{
    char sig[72], hdr_sig[128], hdr_id[96];
    alerts_signature(sig, e->secret, body->data, body->len);
    snprintf(hdr_sig, sizeof hdr_sig, "X-Stacksift-Signature: %s", sig);
    snprintf(hdr_id, sizeof hdr_id, "X-Stacksift-Event: %s", e->id);
    CURL *h = curl_easy_init();
    if (h == NULL) {
        snprintf(why, 200, "libcurl: no handle");
        return false;
    }
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, hdr_sig);
    hdrs = curl_slist_append(hdrs, hdr_id);
    hdrs = curl_slist_append(hdrs, "User-Agent: stacksift-alerts");
    curl_easy_setopt(h, CURLOPT_URL, e->url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)body->data);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)body->len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)a->o.timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)a->o.timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    if (cc != CURLE_OK) {
        snprintf(why, 200, "%s", curl_easy_strerror(cc));
        return false;
    }
    if (status < 200 || status > 299) {
        snprintf(why, 200, "HTTP %ld", status);
        return false;
    }
    return true;
}

static unsigned retry_ms(const alerts *a, int attempts)
{
    uint64_t ms = a->o.retry_base_ms;
    for (int i = 0; i < attempts && ms < MAX_RETRY_MS; i++)
        ms *= 2;
    return ms > MAX_RETRY_MS ? MAX_RETRY_MS : (unsigned)ms;
}

/* One claim: deliver each event, record the outcomes. Returns events handled. */
static size_t deliver_batch(alerts *a)
{
    arena *ar = arena_new(8u << 20);
    err_info err = {0};
    store_alert_claim *claim;
    const store_alert_due *ev;
    size_t n;
    if (store_alert_claim_begin(&claim, &ev, &n, a->s, a->o.batch, a->o.give_up_s, ar, &err) !=
        ERR_OK) {
        log_event(LOG_WARN, "alerts_claim_failed", "message=%s", err.msg);
        arena_free(ar);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        buf body;
        buf_init(&body);
        alerts_body(&body, &ev[i], a->public_url);
        char why[200] = "";
        bool ok = post(a, &ev[i], &body, why);
        buf_reset(&body);
        store_alert_claim_result(claim, i, ok, ok ? NULL : why, retry_ms(a, ev[i].attempts));
        if (ok)
            log_event(LOG_INFO, "alert_delivered", "id=%s kind=%s attempts=%d", ev[i].id,
                      ev[i].kind, ev[i].attempts + 1);
        else
            log_event(ev[i].last_chance ? LOG_ERROR : LOG_WARN,
                      ev[i].last_chance ? "alert_failed" : "alert_retry",
                      "id=%s kind=%s attempts=%d message=%s", ev[i].id, ev[i].kind,
                      ev[i].attempts + 1, why);
    }
    if (store_alert_claim_end(claim, true, &err) != ERR_OK)
        log_event(LOG_WARN, "alerts_record_failed", "message=%s", err.msg);
    arena_free(ar);
    return n;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The delivery thread (workpool_fn): spike sweeps, then batches of events until none is due,
 * then a nap of poll_ms, until stopped. */
static void run(workpool *wp, unsigned index, void *vctx)
{
    alerts *a = vctx;
    (void)index;
    double next_sweep = mono_s();
    while (!workpool_stopping(wp)) {
        if (a->o.sweep_s && mono_s() >= next_sweep) {
            int64_t made = 0;
            err_info err = {0};
            if (store_alert_sweep_spikes(&made, a->s, &err) != ERR_OK)
                log_event(LOG_WARN, "alerts_sweep_failed", "message=%s", err.msg);
            else if (made)
                log_event(LOG_INFO, "alerts_spikes", "events=%lld", (long long)made);
            next_sweep = mono_s() + a->o.sweep_s;
        }
        if (deliver_batch(a) == 0)
            workpool_wait(wp, a->o.poll_ms);
    }
}

err_code alerts_new(alerts **out, store *s, const alerts_options *o, err_info *err)
{
    *out = NULL;
    /* once per process, before any thread uses libcurl (curl_global_init is not
     * thread-safe); repeated calls only count */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return err_set(err, ERR_INTERNAL, "alerts: libcurl did not initialize");
    alerts *a = xcalloc(1, sizeof *a);
    a->o = *o;
    if (a->o.batch == 0)
        a->o.batch = 16;
    if (a->o.poll_ms == 0)
        a->o.poll_ms = 1000;
    a->public_url = xstrdup(o->public_url ? o->public_url : "");
    size_t len = strlen(a->public_url);
    while (len > 0 && a->public_url[len - 1] == '/')
        a->public_url[--len] = '\0';
    a->s = s;
    *out = a;
    return ERR_OK;
}

err_code alerts_start(alerts *a, err_info *err)
{
    if (a->thread != NULL)
        return ERR_OK;
    return workpool_start(&a->thread, 1, run, a, err);
}

void alerts_free(alerts *a)
{
    if (a == NULL)
        return;
    workpool_free(a->thread);   /* a delivery in flight finishes or times out first */
    free(a->public_url);
    free(a);
    curl_global_cleanup();
}
