/*
 * sessions - session updates checked, folded per session and counted (see sessions.h).
 */
#include "ingest/sessions.h"

#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsonr.h"
#include "base/xalloc.h"
#include "store/store_sessions.h"

#define MAX_AGE_MS (5LL * 24 * 3600 * 1000)     /* Sentry ignores older sessions */
#define MAX_AHEAD_MS (24LL * 3600 * 1000)       /* a clock this far ahead is wrong */

static const char *const STATUS_NAMES[] = {"ok", "exited", "crashed", "abnormal", "errored"};

bool sessions_status_parse(session_status *out, const char *name)
{
    for (size_t i = 0; i < sizeof STATUS_NAMES / sizeof STATUS_NAMES[0]; i++)
        if (name && strcmp(name, STATUS_NAMES[i]) == 0) {
            *out = (session_status)i;
            return true;
        }
    return false;
}

/* Digits at *p (exactly n of them) -> *out; advances *p. */
static bool digits(int *out, const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* Days from 1970-01-01 to y-m-1 in the proleptic Gregorian calendar (what timegm counts),
 * by whole 400-year eras: timegm itself takes the time zone lock and searches, ~0.2 us a
 * call. Days past the month's end carry over as timegm's normalization does. */
static int64_t days_from_civil(int64_t y, int m)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                   /* [0, 399] */
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5;         /* from March 1 */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

bool sessions_time_parse(int64_t *out_ms, const char *s)
{
    int y, mo, d, h, mi, sec, ms = 0;
    const char *p = s;
    if (s == NULL || !digits(&y, &p, 4) || *p++ != '-' || !digits(&mo, &p, 2) || *p++ != '-' ||
        !digits(&d, &p, 2) || (*p != 'T' && *p != 't' && *p != ' '))
        return false;
    p++;
    if (!digits(&h, &p, 2) || *p++ != ':' || !digits(&mi, &p, 2) || *p++ != ':' ||
        !digits(&sec, &p, 2))
        return false;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (*p >= '0' && *p <= '9') {
            if (nd < 3)
                ms = ms * 10 + (*p - '0');
            nd++;
            p++;
        }
        if (nd == 0)
            return false;
        for (; nd < 3; nd++)
            ms *= 10;
    }
    int off_min = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (!digits(&oh, &p, 2) || *p++ != ':' || !digits(&om, &p, 2))
            return false;
        off_min = sign * (oh * 60 + om);
    } else if (*p != '\0') {
        return false;   /* Sentry SDKs always send an offset; a naive time is taken as UTC */
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return false;
    int64_t t = (days_from_civil(y, mo) + d - 1) * 86400 + h * 3600 + mi * 60 + sec;
    *out_ms = (t - off_min * 60LL) * 1000 + ms;
    return true;
}

static int64_t now_ms_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void field_set(char field[SESSIONS_FIELD_MAX], const char *prefix, size_t i,
                      const char *name)
{
    if (field)
        snprintf(field, SESSIONS_FIELD_MAX, "%s[%zu]%s%s", prefix, i, name[0] ? "." : "", name);
}

/* SHA-256 fetched once: EVP_sha256() makes every EVP_Digest fetch it again (OpenSSL 3),
 * ~1.1 us of a 1.4 us hash; with this and one context per batch a hash takes ~0.3 us. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);   /* kept for the process */
}

/* A context for hash16, one per batch. NULL only when OpenSSL cannot allocate. */
static EVP_MD_CTX *hash_begin(void)
{
    pthread_once(&sha256_once, sha256_fetch);
    return EVP_MD_CTX_new();
}

/* 16 bytes of SHA-256 of `s`, and the leading zero bits of the whole digest. */
static void hash16(EVP_MD_CTX *ctx, uint8_t out[16], uint8_t *lvl, const char *s)
{
    uint8_t md[32];
    unsigned n = 32;
    if (ctx == NULL || sha256_md == NULL || EVP_DigestInit_ex(ctx, sha256_md, NULL) != 1 ||
        EVP_DigestUpdate(ctx, s, strlen(s)) != 1 || EVP_DigestFinal_ex(ctx, md, &n) != 1)
        EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL);   /* the slow way still works */
    memcpy(out, md, 16);
    if (lvl) {
        unsigned z = 0;
        for (int i = 0; i < 32 && z == 8u * (unsigned)i; i++)
            z += md[i] ? (unsigned)__builtin_clz(md[i]) - 24u : 8u;
        *lvl = (uint8_t)(z > 64 ? 64 : z);
    }
}

/* The checks every release/environment/did pass, in either kind of batch. */
static err_code check_names(const char *release, const char *env, const char *did,
                            char field[SESSIONS_FIELD_MAX], const char *prefix, size_t i,
                            err_info *err)
{
    if (release == NULL || release[0] == '\0') {
        field_set(field, prefix, i, "release");
        return err_set(err, ERR_INVALID, "%s[%zu].release: required", prefix, i);
    }
    if (strlen(release) > SESSIONS_MAX_NAME) {
        field_set(field, prefix, i, "release");
        return err_set(err, ERR_INVALID, "%s[%zu].release: longer than %d bytes", prefix, i,
                       SESSIONS_MAX_NAME);
    }
    if (env && strlen(env) > SESSIONS_MAX_NAME) {
        field_set(field, prefix, i, "environment");
        return err_set(err, ERR_INVALID, "%s[%zu].environment: longer than %d bytes", prefix, i,
                       SESSIONS_MAX_NAME);
    }
    if (did && strlen(did) > SESSIONS_MAX_ID) {
        field_set(field, prefix, i, "did");
        return err_set(err, ERR_INVALID, "%s[%zu].did: longer than %d bytes", prefix, i,
                       SESSIONS_MAX_ID);
    }
    return ERR_OK;
}

static bool too_old_or_ahead(int64_t started_ms, int64_t now)
{
    return started_ms < now - MAX_AGE_MS || started_ms > now + MAX_AHEAD_MS;
}

/* Index sort of the kept updates by sid hash, keeping arrival order within one session. */
typedef struct {
    uint8_t sid[16];
    size_t index;
} sid_ref;

static int sid_ref_cmp(const void *pa, const void *pb)
{
    const sid_ref *a = pa, *b = pb;
    int c = memcmp(a->sid, b->sid, 16);
    return c ? c : (a->index < b->index ? -1 : a->index > b->index);
}

err_code sessions_ingest(sessions_result *out, char field[SESSIONS_FIELD_MAX], store *s,
                         int64_t project_id, const session_update *u, size_t n,
                         const char *prefix, int64_t now_ms, err_info *err)
{
    memset(out, 0, sizeof *out);
    if (field)
        field[0] = '\0';
    prefix = prefix ? prefix : "sessions";
    if (n > SESSIONS_MAX_BATCH) {
        field_set(field, prefix, SESSIONS_MAX_BATCH, "");
        return err_set(err, ERR_TOO_LARGE, "%s[%d]: more than %d sessions in one batch", prefix,
                       SESSIONS_MAX_BATCH, SESSIONS_MAX_BATCH);
    }
    int64_t now = now_ms ? now_ms : now_ms_clock();
    /* Every update is checked before anything is counted: all or nothing. */
    for (size_t i = 0; i < n; i++) {
        const session_update *x = &u[i];
        if (x->sid == NULL || x->sid[0] == '\0' || strlen(x->sid) > SESSIONS_MAX_ID) {
            field_set(field, prefix, i, "sid");
            return err_set(err, ERR_INVALID, "%s[%zu].sid: required, 1 to %d bytes", prefix, i,
                           SESSIONS_MAX_ID);
        }
        err_code rc = check_names(x->release, x->environment, x->did, field, prefix, i, err);
        if (rc != ERR_OK)
            return rc;
        if (x->duration_s < 0) {
            field_set(field, prefix, i, "duration_s");
            return err_set(err, ERR_INVALID, "%s[%zu].duration_s: negative (%g)", prefix, i,
                           x->duration_s);
        }
        if ((unsigned)x->status > SESSION_ERRORED) {
            field_set(field, prefix, i, "status");
            return err_set(err, ERR_INVALID, "%s[%zu].status: unknown", prefix, i);
        }
    }
    sid_ref *refs = n ? xcalloc(n, sizeof *refs) : NULL;
    size_t nrefs = 0;
    EVP_MD_CTX *hctx = hash_begin();
    for (size_t i = 0; i < n; i++) {
        if (too_old_or_ahead(u[i].started_ms, now)) {
            out->ignored++;
            continue;
        }
        hash16(hctx, refs[nrefs].sid, NULL, u[i].sid);
        refs[nrefs++].index = i;
    }
    if (nrefs)
        qsort(refs, nrefs, sizeof *refs, sid_ref_cmp);
    store_session_delta *d = nrefs ? xcalloc(nrefs, sizeof *d) : NULL;
    size_t nd = 0;
    for (size_t i = 0; i < nrefs; i++) {
        const session_update *x = &u[refs[i].index];
        store_session_delta *cur;
        if (nd == 0 || memcmp(d[nd - 1].sid, refs[i].sid, 16) != 0) {
            /* the session's first update in this batch: its attributes */
            cur = &d[nd++];
            memcpy(cur->sid, refs[i].sid, 16);
            cur->release = x->release;
            cur->environment = x->environment && x->environment[0] ? x->environment
                                                                   : "production";
            cur->started_ms = x->started_ms;
            if (x->did && x->did[0]) {
                cur->has_uid = true;
                hash16(hctx, cur->uid, &cur->lvl, x->did);
            }
        } else {
            cur = &d[nd - 1];
        }
        cur->init |= x->init;
        if (cur->final != STORE_SESSION_OPEN)
            continue;   /* after a final update only a late init still counts */
        if (x->errors > 0 || x->status == SESSION_ERRORED)
            cur->errored = true;
        if (x->status == SESSION_EXITED)
            cur->final = STORE_SESSION_EXITED;
        else if (x->status == SESSION_CRASHED)
            cur->final = STORE_SESSION_CRASHED;
        else if (x->status == SESSION_ABNORMAL)
            cur->final = STORE_SESSION_ABNORMAL;
    }
    free(refs);
    EVP_MD_CTX_free(hctx);
    err_code rc = store_sessions_apply(s, project_id, d, nd, err);
    free(d);
    if (rc == ERR_OK)
        out->accepted = n - out->ignored;
    return rc;
}

err_code sessions_ingest_aggregates(sessions_result *out, char field[SESSIONS_FIELD_MAX],
                                    store *s, int64_t project_id, const session_aggregate *a,
                                    size_t n, const char *prefix, int64_t now_ms,
                                    err_info *err)
{
    memset(out, 0, sizeof *out);
    if (field)
        field[0] = '\0';
    prefix = prefix ? prefix : "aggregates";
    if (n > SESSIONS_MAX_BATCH) {
        field_set(field, prefix, SESSIONS_MAX_BATCH, "");
        return err_set(err, ERR_TOO_LARGE, "%s[%d]: more than %d rows in one batch", prefix,
                       SESSIONS_MAX_BATCH, SESSIONS_MAX_BATCH);
    }
    for (size_t i = 0; i < n; i++) {
        err_code rc = check_names(a[i].release, a[i].environment, a[i].did, field, prefix, i,
                                  err);
        if (rc != ERR_OK)
            return rc;
    }
    int64_t now = now_ms ? now_ms : now_ms_clock();
    store_session_agg *rows = n ? xcalloc(n, sizeof *rows) : NULL;
    size_t nrows = 0;
    EVP_MD_CTX *hctx = hash_begin();
    for (size_t i = 0; i < n; i++) {
        if (too_old_or_ahead(a[i].started_ms, now)) {
            out->ignored++;
            continue;
        }
        store_session_agg *r = &rows[nrows++];
        r->release = a[i].release;
        r->environment = a[i].environment && a[i].environment[0] ? a[i].environment
                                                                 : "production";
        r->started_ms = a[i].started_ms;
        r->crashed = a[i].crashed;
        r->abnormal = a[i].abnormal;
        r->errored = a[i].errored;
        r->sessions = (int64_t)a[i].exited + a[i].errored + a[i].abnormal + a[i].crashed;
        if (a[i].did && a[i].did[0]) {
            r->has_uid = true;
            hash16(hctx, r->uid, &r->lvl, a[i].did);
        }
    }
    EVP_MD_CTX_free(hctx);
    err_code rc = store_sessions_add(s, project_id, rows, nrows, err);
    free(rows);
    if (rc == ERR_OK)
        out->accepted = n - out->ignored;
    return rc;
}

/* ---- JSON ------------------------------------------------------------------------------ */

/* A string member: NULL when absent or null; false when present with another type. The
 * string is borrowed from the tree, which lives in the arena until arena_free; jsonr refuses
 * \u0000, so it is a whole C string. */
static bool jstr(const char **out, const jsonr_value *o, const char *key)
{
    const jsonr_value *v = jsonr_get(o, key);
    *out = NULL;
    if (v == NULL || jsonr_is_null(v))
        return true;
    if (!jsonr_is_string(v))
        return false;
    *out = jsonr_string(v);
    return true;
}

/* A time member: RFC 3339 text or Unix seconds. */
static bool jtime(int64_t *out, bool *present, const jsonr_value *o, const char *key)
{
    const jsonr_value *v = jsonr_get(o, key);
    *present = v != NULL && !jsonr_is_null(v);
    if (!*present)
        return true;
    if (jsonr_is_number(v)) {
        double sec = jsonr_number(v);
        if (!isfinite(sec) || fabs(sec) > 1e11)
            return false;
        *out = (int64_t)llround(sec * 1000.0);
        return true;
    }
    return jsonr_is_string(v) && sessions_time_parse(out, jsonr_string(v));
}

/* A non-negative integer member, default 0. */
static bool juint(uint32_t *out, const jsonr_value *o, const char *key)
{
    const jsonr_value *v = jsonr_get(o, key);
    *out = 0;
    if (v == NULL || jsonr_is_null(v))
        return true;
    if (!jsonr_is_integer(v) || jsonr_integer(v) < 0 || jsonr_integer(v) > UINT32_MAX)
        return false;
    *out = (uint32_t)jsonr_integer(v);
    return true;
}

/* The body as a tree in `a` (a batch of 100,000 sessions: ~35 MB of it, within a
 * request's arena; past the arena's budget, ERR_TOO_LARGE). */
static err_code load(const jsonr_value **root, char field[SESSIONS_FIELD_MAX], const char *json,
                     size_t len, arena *a, err_info *err)
{
    jsonr_error je;
    *root = jsonr_parse(a, json, len, 0, NULL, &je);
    if (*root == NULL) {
        snprintf(field, SESSIONS_FIELD_MAX, "body");
        if (je.code == JSONR_ERR_TOO_LARGE)
            return err_set(err, ERR_TOO_LARGE, "body: too large to parse (%zu bytes of JSON)",
                           len);
        return err_set(err, ERR_INVALID, "body: not JSON (line %d: %.100s)", je.line, je.text);
    }
    if (!jsonr_is_object(*root)) {
        snprintf(field, SESSIONS_FIELD_MAX, "body");
        return err_set(err, ERR_INVALID, "body: not a JSON object");
    }
    return ERR_OK;
}

/* One update object (our API's or a Sentry item's; `sentry` picks the member names). */
static err_code parse_update(session_update *x, char field[SESSIONS_FIELD_MAX],
                             const jsonr_value *o, const char *prefix, size_t i, bool sentry,
                             err_info *err)
{
    memset(x, 0, sizeof *x);
    x->duration_s = NAN;
#define BAD(name, why)                                                                 \
    do {                                                                               \
        field_set(field, prefix, i, name);                                             \
        return err_set(err, ERR_INVALID, "%s[%zu].%s: %s", prefix, i, name, why);      \
    } while (0)
    if (!jsonr_is_object(o)) {
        field_set(field, prefix, i, "");
        return err_set(err, ERR_INVALID, "%s[%zu]: not an object", prefix, i);
    }
    if (!jstr(&x->sid, o, "sid"))
        BAD("sid", "not a string");
    if (!jstr(&x->did, o, "did"))
        BAD("did", "not a string");
    const jsonr_value *attrs = sentry ? jsonr_get(o, "attrs") : o;
    if (sentry && attrs != NULL && !jsonr_is_object(attrs))
        BAD("attrs", "not an object");
    if (!jstr(&x->release, attrs, "release"))
        BAD(sentry ? "attrs.release" : "release", "not a string");
    if (!jstr(&x->environment, attrs, "environment"))
        BAD(sentry ? "attrs.environment" : "environment", "not a string");
    bool present;
    if (!jtime(&x->started_ms, &present, o, "started"))
        BAD("started", "not an RFC 3339 time or Unix seconds");
    if (!present)
        BAD("started", "required");
    if (!jtime(&x->timestamp_ms, &present, o, "timestamp"))
        BAD("timestamp", "not an RFC 3339 time or Unix seconds");
    const char *dname = sentry ? "duration" : "duration_s";
    const jsonr_value *dur = jsonr_get(o, dname);
    if (dur != NULL && !jsonr_is_null(dur)) {
        if (!jsonr_is_number(dur))
            BAD(dname, "not a number");
        x->duration_s = jsonr_number(dur);
        if (x->duration_s < 0)
            BAD(dname, "negative");
    }
    const char *status;
    if (!jstr(&status, o, "status"))
        BAD("status", "not a string");
    if (status == NULL)
        x->status = SESSION_OK;
    else if (!sessions_status_parse(&x->status, status)) {
        field_set(field, prefix, i, "status");
        return err_set(err, ERR_INVALID, "%s[%zu].status: unknown status \"%.32s\" (ok, exited, "
                       "crashed, abnormal, errored)", prefix, i, status);
    }
    if (!juint(&x->errors, o, "errors"))
        BAD("errors", "not a non-negative integer");
    const jsonr_value *init = jsonr_get(o, "init");
    if (init != NULL && !jsonr_is_null(init) && !jsonr_is_boolean(init))
        BAD("init", "not a boolean");
    /* Sentry: init only when sent true; our API: each session sent once, so default true */
    x->init = jsonr_is_boolean(init) ? jsonr_is_true(init) : !sentry;
#undef BAD
    return ERR_OK;
}

err_code sessions_parse_json(session_update **out, size_t *n, char field[SESSIONS_FIELD_MAX],
                             const char *json, size_t len, arena *a, err_info *err)
{
    *out = NULL;
    *n = 0;
    field[0] = '\0';
    const jsonr_value *root;
    err_code rc = load(&root, field, json, len, a, err);
    if (rc != ERR_OK)
        return rc;
    const jsonr_value *arr = jsonr_get(root, "sessions");
    if (!jsonr_is_array(arr)) {
        snprintf(field, SESSIONS_FIELD_MAX, "sessions");
        return err_set(err, ERR_INVALID, "sessions: required, an array");
    }
    size_t count = jsonr_size(arr);
    if (count > SESSIONS_MAX_BATCH) {
        field_set(field, "sessions", SESSIONS_MAX_BATCH, "");
        return err_set(err, ERR_TOO_LARGE, "sessions[%d]: more than %d sessions in one batch "
                       "(%zu sent)", SESSIONS_MAX_BATCH, SESSIONS_MAX_BATCH, count);
    }
    session_update *u = arena_alloc_array(a, count ? count : 1, sizeof *u, err);
    if (u == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < count; i++) {
        rc = parse_update(&u[i], field, jsonr_at(arr, i), "sessions", i, false, err);
        if (rc != ERR_OK)
            return rc;
    }
    *out = u;
    *n = count;
    return ERR_OK;
}

err_code sessions_parse_sentry_session(session_update *out, char field[SESSIONS_FIELD_MAX],
                                       const char *json, size_t len, arena *a, err_info *err)
{
    field[0] = '\0';
    const jsonr_value *root;
    err_code rc = load(&root, field, json, len, a, err);
    if (rc != ERR_OK)
        return rc;
    rc = parse_update(out, field, root, "session", 0, true, err);
    if (rc == ERR_OK && out->timestamp_ms == 0)
        out->timestamp_ms = out->started_ms;
    return rc;
}

err_code sessions_parse_sentry_aggregates(session_aggregate **out, size_t *n,
                                          char field[SESSIONS_FIELD_MAX], const char *json,
                                          size_t len, arena *a, err_info *err)
{
    *out = NULL;
    *n = 0;
    field[0] = '\0';
    const jsonr_value *root;
    err_code rc = load(&root, field, json, len, a, err);
    if (rc != ERR_OK)
        return rc;
    const jsonr_value *attrs = jsonr_get(root, "attrs");
    const char *release = NULL, *env = NULL;
    if (!jsonr_is_object(attrs) || !jstr(&release, attrs, "release") ||
        !jstr(&env, attrs, "environment")) {
        snprintf(field, SESSIONS_FIELD_MAX, "attrs");
        return err_set(err, ERR_INVALID, "attrs: required, an object with string release and "
                       "environment");
    }
    const jsonr_value *arr = jsonr_get(root, "aggregates");
    if (!jsonr_is_array(arr)) {
        snprintf(field, SESSIONS_FIELD_MAX, "aggregates");
        return err_set(err, ERR_INVALID, "aggregates: required, an array");
    }
    size_t count = jsonr_size(arr);
    if (count > SESSIONS_MAX_BATCH) {
        field_set(field, "aggregates", SESSIONS_MAX_BATCH, "");
        return err_set(err, ERR_TOO_LARGE, "aggregates[%d]: more than %d rows", SESSIONS_MAX_BATCH,
                       SESSIONS_MAX_BATCH);
    }
    session_aggregate *g = arena_alloc_array(a, count ? count : 1, sizeof *g, err);
    if (g == NULL)
        return ERR_TOO_LARGE;
    for (size_t i = 0; i < count; i++) {
        const jsonr_value *o = jsonr_at(arr, i);
        session_aggregate *x = &g[i];
        memset(x, 0, sizeof *x);
        x->release = release;
        x->environment = env;
        bool present;
        const char *bad = NULL;
        if (!jsonr_is_object(o))
            bad = "";
        else if (!jtime(&x->started_ms, &present, o, "started") || !present)
            bad = "started";
        else if (!jstr(&x->did, o, "did"))
            bad = "did";
        else if (!juint(&x->exited, o, "exited"))
            bad = "exited";
        else if (!juint(&x->errored, o, "errored"))
            bad = "errored";
        else if (!juint(&x->abnormal, o, "abnormal"))
            bad = "abnormal";
        else if (!juint(&x->crashed, o, "crashed"))
            bad = "crashed";
        if (bad) {
            field_set(field, "aggregates", i, bad);
            return err_set(err, ERR_INVALID, "aggregates[%zu]%s%s: missing or of the wrong type",
                           i, bad[0] ? "." : "", bad);
        }
    }
    *out = g;
    *n = count;
    return ERR_OK;
}
