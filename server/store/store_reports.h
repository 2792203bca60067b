/*
 * store_reports - reports as received and as processed (store_reports.c).
 * Errors as in store.h.
 */
#ifndef STACKSIFT_STORE_STORE_REPORTS_H
#define STACKSIFT_STORE_STORE_REPORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "store/store.h"

/* What intake stores for a new report. Strings are NUL-terminated; NULL = unknown. */
/* A report the intake processed itself (pipeline_process_at_intake): stored as 'processed'
 * with its model, in the same commit as its issue's upsert (store_intake.h). */
typedef struct {
    const char *issue_app;          /* the app of its issue ("" if unknown) */
    const char *fingerprint;        /* 64 hex */
    const char *kind;               /* "crash", "hang", "sample" */
    const char *title, *culprit, *exception, *basis; /* used when the issue is created */
    bool provisional;
    const char *frames_json;        /* JSON array of the signature frames */
    const char *hardware_model;     /* or NULL */
    const char *symbolicated_json;  /* the symbolicated model (JSON object) */
    size_t symbolicated_len;        /* its strlen, or 0 when not measured */
    /* a minidump's (store_outcome's): the in-app images its walk went through without unwind
     * info, a JSON array of UUIDs, and what the walk saw of each one's debug file,
     * [{"uuid","seen"}]; NULL: none. A row that changed since it was seen stores the report
     * as received (with its issue), for the workers to walk again. */
    const char *unwind_uuids_json;
    const char *unwind_checks_json;
} store_report_processed;

typedef struct {
    const char *status;       /* "received" (to be processed) or "failed" */
    const char *format;       /* "apple_text", "ips", "json" */
    const char *content_type; /* media type as sent, without parameters */
    const uint8_t *raw;       /* the report, decoded from any Content-Encoding, or the gzip'd
                                 body it came in when that is smaller (ingest_raw_report) */
    size_t raw_len;
    size_t report_len;        /* the report's own bytes when raw is the gzip'd body (what
                                 reports.raw_bytes says); 0: raw_len */
    const char *parsed_json;  /* parsed model as JSON text, or NULL */
    const char *app;          /* summary fields of the parsed model, or NULL */
    const char *app_version;
    const char *os_version;
    const char *missing_uuids_json; /* JSON array of UUID strings, or NULL */
    const char *error;        /* why it failed, or NULL */
    const store_report_processed *processed; /* store_intake only: processed at intake, or
                                                NULL (see store_intake_submit) */
    int64_t project_id;       /* projects.id it belongs to (and is grouped in); 0 = the
                                 default project, STORE_PROJECT_DEFAULT */
    const char *id;           /* store_intake only: the id the client gave the report (a Sentry
                                 event_id, store_report_id_norm's forms), NULL = a new UUIDv7 */
} store_report_new;

/* A stored report; strings allocated in the caller's arena, NULL when the column is NULL. */
typedef struct {
    char id[37];
    const char *status;
    const char *format;
    const char *content_type;
    const char *received_at;   /* RFC 3339 UTC */
    const char *updated_at;
    int64_t raw_bytes;
    const char *parsed_json;
    const char *app;
    const char *app_version;
    const char *os_version;
    const char *missing_uuids_json; /* JSON array */
    const char *unwind_uuids_json;  /* JSON array: in-app images a minidump's walk went
                                       through without their unwind info */
    const char *error;
    /* what the pipeline added (NULL / 0 until the report is processed) */
    int64_t issue_id;               /* 0 = none */
    const char *fingerprint;
    const char *kind;
    const char *hardware_model;
    const char *symbolicated_json;  /* the symbolicated model, a JSON object */
    const char *processed_at;       /* RFC 3339 UTC */
    int64_t project_id;             /* projects.id */
} store_report;

/* store_report_insert - commit a new report and write its id (a UUID) to id_out. When this
 * returns ERR_OK the row is durable. Errors ERR_STORE, ERR_INTERNAL (a value the database
 * refused). */
err_code store_report_insert(char id_out[37], store *s, const store_report_new *r, err_info *err);

/* store_report_id_norm - the one rule for a report id given by a client: a UUID as 36
 * characters (8-4-4-4-12, dashes) or as its 32 hex digits, any case. Writes the canonical
 * lower-case dashed form to out; false if `id` is neither. */
bool store_report_id_norm(char out[37], const char *id);

/* store_report_get - the report `id` (store_report_id_norm's forms), everything but its raw
 * bytes, in one query; strings in `a`. Errors ERR_NOT_FOUND (also for an id that is not a
 * report id), ERR_STORE, ERR_TOO_LARGE (arena full). */
err_code store_report_get(store_report *out, store *s, const char *id, arena *a, err_info *err);

/* store_report_raw_get - the stored raw bytes of report `id` and its content type, in `a`
 * (NUL-terminated beyond *len): the report as received, after its Content-Encoding or, when
 * that was smaller, still gzip'd (ingest_raw_report reads both). Errors ERR_NOT_FOUND,
 * ERR_STORE, ERR_TOO_LARGE. */
err_code store_report_raw_get(const uint8_t **raw, size_t *len, const char **content_type,
                              store *s, const char *id, arena *a, err_info *err);

/* store_reports_count - how many reports have `status` (NULL = all); for tests and metrics. */
err_code store_reports_count(int64_t *out, store *s, const char *status, err_info *err);

#endif
