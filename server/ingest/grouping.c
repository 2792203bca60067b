/*
 * grouping - see grouping.h. A batch holds at most a few hundred reports and most of them
 * repeat a handful of signatures, so groups are found by a linear scan.
 */
#include "ingest/grouping.h"

#include <stdbool.h>
#include <string.h>

static bool same_issue(const store_outcome *a, const store_outcome *b)
{
    return strcmp(a->app, b->app) == 0 && strcmp(a->fingerprint, b->fingerprint) == 0;
}

/* Reprocessing that kept the fingerprint: the report stays where it is. */
static bool stays(const store_claimed *row, const store_outcome *o)
{
    return o->grouped && row->issue_id != 0 && row->fingerprint != NULL &&
           strcmp(row->fingerprint, o->fingerprint) == 0;
}

static bool has_version(const store_group *g, const char *v)
{
    for (size_t i = 0; i < g->nversions; i++)
        if (strcmp(g->versions[i], v) == 0)
            return true;
    return false;
}

err_code grouping_decide(store_group **groups, size_t *ngroups, store_outcome *out,
                         const store_claimed *rows, size_t n, arena *a, err_info *err)
{
    size_t *first = arena_alloc_array(a, n ? n : 1, sizeof *first, err); /* group -> outcome */
    store_group *gs = arena_alloc_array(a, n ? n : 1, sizeof *gs, err);
    const char **versions = arena_alloc_array(a, n ? n : 1, sizeof *versions, err);
    size_t ng = 0, nv = 0;
    *groups = NULL;
    *ngroups = 0;
    if (first == NULL || gs == NULL || versions == NULL)
        return ERR_TOO_LARGE;

    for (size_t i = 0; i < n; i++) {
        store_outcome *o = &out[i];
        o->group = STORE_NO_GROUP;
        o->issue_id = stays(&rows[i], o) ? rows[i].issue_id : 0;
        o->leaves = rows[i].issue_id != 0 && !stays(&rows[i], o);
        if (!o->grouped || o->issue_id != 0)
            continue;
        size_t g = 0;
        while (g < ng && !(rows[first[g]].project_id == rows[i].project_id &&
                           same_issue(&out[first[g]], o)))
            g++;
        if (g == ng) {
            first[ng++] = i;
            gs[g] = (store_group){
                .project_id = rows[i].project_id,
                .app = o->app, .kind = o->kind, .fingerprint = o->fingerprint,
                .title = o->title, .culprit = o->culprit, .exception = o->exception,
                .basis = o->basis, .provisional = o->provisional,
                .frames_json = o->frames_json,
            };
        }
        o->group = g;
    }

    /* Each group's counts, times and versions, in one pass per group; the versions of all
     * groups share one array (a report adds at most one). */
    for (size_t g = 0; g < ng; g++) {
        store_group *grp = &gs[g];
        grp->versions = &versions[nv];
        for (size_t i = first[g]; i < n; i++) {
            if (out[i].group != g)
                continue;
            const store_claimed *row = &rows[i];
            grp->count++;
            if (grp->first_seen == NULL || strcmp(row->received_at, grp->first_seen) < 0)
                grp->first_seen = row->received_at;
            if (grp->last_seen == NULL || strcmp(row->received_at, grp->last_seen) >= 0) {
                grp->last_seen = row->received_at;
                grp->last_report = row->id;
            }
            if (out[i].app_version != NULL && !has_version(grp, out[i].app_version)) {
                versions[nv++] = out[i].app_version;
                grp->nversions++;
            }
        }
    }
    *groups = gs;
    *ngroups = ng;
    return ERR_OK;
}
