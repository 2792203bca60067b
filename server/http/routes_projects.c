/*
 * routes_projects - GET /api/v1/projects (the dashboard's project selector) and the rule
 * for a list's `project=` filter (request_project_filter), shared by the issues and call
 * sites routes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "http/http_internal.h"
#include "store/store_projects.h"

err_code request_project_filter(int64_t *project_id, http_request *r)
{
    *project_id = 0;
    if (request_arg(r, "project") == NULL)
        return ERR_OK;   /* a list without project= spans every project */
    return request_project_arg(project_id, r);
}

/* The wire format (docs/openapi.yaml, ProjectList): {"projects":[{id,slug,name,created_at,
 * keys}]}, by id; never a key. */
enum MHD_Result handle_projects_list(http_request *r)
{
    store_project *rows;
    size_t n;
    if (store_projects_list(&rows, &n, r->srv->store, &r->err) != ERR_OK)
        return respond_err(r, &r->err);
    buf body;
    jsonw w;
    json_body_begin(&body, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "projects");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        jsonw_object_begin(&w);
        jsonw_kint(&w, "id", rows[i].id);
        jsonw_kstr(&w, "slug", rows[i].slug);
        jsonw_kstr(&w, "name", rows[i].name);
        jsonw_kstr(&w, "created_at", rows[i].created_at);
        jsonw_kint(&w, "keys", rows[i].keys);
        jsonw_object_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    free(rows);
    return respond_json(r, 200, &body);
}
