/*
 * store_web - SQL for the dashboard's own helpers (see store_web.h). The answer is built by
 * Postgres (json_build_object) and handed back as text, like the issues API's.
 */
#include "store/store_web.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "store/store_internal.h"

/* $1 bigint[] of issue ids, $2 number of days. Days are UTC, as issue_days counts them. */
static const char SQL_DAILY[] =
    "WITH d AS (SELECT g::date AS day FROM generate_series("
    "(now() AT TIME ZONE 'UTC')::date - ($2::int - 1), (now() AT TIME ZONE 'UTC')::date, "
    "interval '1 day') g) "
    "SELECT json_build_object("
    "'days', (SELECT json_agg(to_char(d.day, 'YYYY-MM-DD') ORDER BY d.day) FROM d), "
    "'issues', coalesce((SELECT json_object_agg(i.id, (SELECT json_agg(coalesce(c.count, 0) "
    "ORDER BY d.day) FROM d LEFT JOIN issue_days c ON c.issue_id = i.id AND c.day = d.day)) "
    "FROM issues i WHERE i.id = ANY($1::bigint[])), '{}'))::text";

typedef struct {
    const char *ids;   /* Postgres array literal: {1,2,3} */
    const char *days;
    arena *a;
    const char **json;
} daily_ctx;

static err_code do_daily(pconn *c, void *vctx, err_info *err)
{
    daily_ctx *q = vctx;
    const char *values[2] = {q->ids, q->days};
    PGresult *res = PQexecParams(c->pg, SQL_DAILY, 2, NULL, values, NULL, NULL, 0);
    err_code rc = ERR_OK;   /* store_dup sets it only when the arena is full */
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        rc = store_translate(res, c, "reading daily counts", err);
    else if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
        rc = err_set(err, ERR_INTERNAL, "reading daily counts: no answer");
    else
        *q->json = store_dup(q->a, res, 0, 0, err, &rc);
    PQclear(res);
    return rc;
}

err_code store_web_daily(const char **json, store *s, const int64_t *ids, size_t n, unsigned days,
                         arena *a, err_info *err)
{
    *json = NULL;
    buf arr;
    buf_init(&arr);
    buf_append_str(&arr, "{");
    for (size_t i = 0; i < n; i++)
        buf_printf(&arr, "%s%" PRId64, i ? "," : "", ids[i]);
    buf_append_str(&arr, "}");
    char days_s[16];
    snprintf(days_s, sizeof days_s, "%u", days);
    daily_ctx q = {(const char *)arr.data, days_s, a, json};
    err_code rc = store_run(s, do_daily, &q, err);
    buf_reset(&arr);
    return rc;
}
