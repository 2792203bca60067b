/*
 * routes_samples - handlers of the privacy-API sample routes (routes_samples.c), registered
 * in ROUTES (server.c). Not for use outside server/http.
 */
#ifndef STACKSIFT_HTTP_ROUTES_SAMPLES_H
#define STACKSIFT_HTTP_ROUTES_SAMPLES_H

#include "http/http_internal.h"

enum MHD_Result handle_samples_post(http_request *r);   /* POST /api/v1/samples */
enum MHD_Result handle_callsites_list(http_request *r); /* GET /api/v1/callsites */
enum MHD_Result handle_callsites_csv(http_request *r);  /* GET /api/v1/callsites.csv */

#endif
