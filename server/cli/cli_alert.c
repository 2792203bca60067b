/*
 * stacksift alert add --kind KIND --url URL [--secret S] [--threshold X] [--min-count N]
 *                     [--project ID]
 *   KIND: new_issue, regression, spike (X times the trailing 7-day hourly mean, at least N
 *   reports in the hour; defaults 3 and 10), crash_free (newest release below X, at least N
 *   sessions; defaults 0.99 and 100), new_callsite. Prints the rule id and its secret (the
 *   HMAC key of X-Stacksift-Signature; generated when not given), shown once.
 * stacksift alert list [--project ID]
 *   One line per rule: id, project, kind, threshold, min count, events pending / delivered /
 *   failed, url. Never the secret.
 * stacksift alert remove ID
 *   The rule and its events.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_db.h"
#include "ingest/alerts.h"
#include "log/log.h"
#include "store/store.h"
#include "store/store_alerts.h"

static int alert_usage(FILE *f)
{
    fprintf(f, "usage: stacksift alert add --kind KIND --url URL [--secret S] [--threshold X]\n"
               "                           [--min-count N] [--project ID]\n"
               "       stacksift alert list [--project ID]\n"
               "       stacksift alert remove ID\n"
               "  KIND: new_issue | regression | spike | crash_free | new_callsite\n"
               "  spike: X times the trailing 7-day hourly mean and >= N reports (3, 10)\n"
               "  crash_free: newest release's crash-free sessions below X, >= N sessions "
               "(0.99, 100)\n");
    return f == stdout ? 0 : 2;
}

/* A positive whole number, or -1. */
static long long whole(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    return *s && !*end && v >= 0 ? v : -1;
}

int cli_alert(int argc, char **argv)
{
    if (argc < 2)
        return alert_usage(stderr);
    const char *verb = argv[1];
    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0)
        return alert_usage(stdout);
    store_alert_rule rule = {.project_id = 1, .threshold = NAN, .min_count = -1};
    int64_t project = 0, id = 0;
    for (int i = 2; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(verb, "remove") == 0 && i == 2 && argc == 3) {
            id = whole(argv[i]);
            if (id < 1)
                return alert_usage(stderr);
        } else if (val && strcmp(argv[i], "--kind") == 0)
            rule.kind = argv[++i];
        else if (val && strcmp(argv[i], "--url") == 0)
            rule.url = argv[++i];
        else if (val && strcmp(argv[i], "--secret") == 0)
            rule.secret = argv[++i];
        else if (val && strcmp(argv[i], "--threshold") == 0) {
            char *end;
            rule.threshold = strtod(argv[++i], &end);
            if (*end)
                return alert_usage(stderr);
        } else if (val && strcmp(argv[i], "--min-count") == 0) {
            rule.min_count = whole(argv[++i]);
            if (rule.min_count < 0)
                return alert_usage(stderr);
        } else if (val && strcmp(argv[i], "--project") == 0) {
            project = rule.project_id = whole(argv[++i]);
            if (project < 1)
                return alert_usage(stderr);
        } else
            return alert_usage(stderr);
    }
    bool add = strcmp(verb, "add") == 0, list = strcmp(verb, "list") == 0;
    if (!add && !list && !(strcmp(verb, "remove") == 0 && id > 0))
        return alert_usage(stderr);
    err_info err = {0};
    char secret[65];
    const char *field = NULL;
    if (add && alerts_rule_check(&rule, secret, &field, &err) != ERR_OK) {
        fprintf(stderr, "stacksift alert add: %s\n", err.msg);
        return 1;
    }
    cli_db db;
    int status = cli_db_open(&db, &err);
    if (status == 2)
        return 2;
    status = 1;
    store *s = db.s;
    arena *a = arena_new(64u << 20);
    if (s == NULL)
        goto fail;
    if (add) {
        int64_t new_id;
        if (store_alert_rule_add(&new_id, s, &rule, &err) != ERR_OK)
            goto fail;
        printf("alert rule %lld: %s -> %s\nsecret (shown once; receivers check "
               "X-Stacksift-Signature with it):\n%s\n", (long long)new_id, rule.kind, rule.url,
               rule.secret);
    } else if (list) {
        store_alert_rule *rows;
        size_t n;
        if (store_alert_rules_list(&rows, &n, s, project, a, &err) != ERR_OK)
            goto fail;
        printf("%-6s  %-7s  %-12s  %-9s  %-9s  %-22s  %s\n", "ID", "PROJECT", "KIND",
               "THRESHOLD", "MIN", "PENDING/SENT/FAILED", "URL");
        for (size_t i = 0; i < n; i++) {
            char thr[24] = "-", minc[24] = "-", ev[64];
            if (!isnan(rows[i].threshold))
                snprintf(thr, sizeof thr, "%g", rows[i].threshold);
            if (rows[i].min_count >= 0)
                snprintf(minc, sizeof minc, "%lld", (long long)rows[i].min_count);
            snprintf(ev, sizeof ev, "%lld/%lld/%lld", (long long)rows[i].pending,
                     (long long)rows[i].delivered, (long long)rows[i].failed);
            printf("%-6lld  %-7lld  %-12s  %-9s  %-9s  %-22s  %s\n", (long long)rows[i].id,
                   (long long)rows[i].project_id, rows[i].kind, thr, minc, ev, rows[i].url);
        }
    } else {
        if (store_alert_rule_remove(s, id, &err) != ERR_OK)
            goto fail;
        printf("removed alert rule %lld and its events\n", (long long)id);
    }
    status = 0;
    goto done;
fail:
    fprintf(stderr, "stacksift alert %s: %s\n", verb, err.msg);
done:
    arena_free(a);
    cli_db_close(&db);
    return status;
}
