/*
 * samplebatch - batches of privacy-API stack samples: the JSON a device POSTs to
 * /api/v1/samples, checked field by field, and its canonical form, the same JSON with
 * identical stacks merged (counts summed) that the server stores until a worker counts it.
 *
 *   {"format_version": 1, "batch_id": "...",            batch_id optional, 1..128 bytes
 *    "app": {"name", "bundle_id", "version", "build"},  name and build required
 *    "os": {"name", "version", "build"},                optional
 *    "device": {"model", "id"},                         id required
 *    "arch": "arm64",                                   optional
 *    "images": [{"name", "uuid", "arch", "load_address", "size", "path", "in_app"}],
 *    "samples": [{"tag", "thread", "frames": ["0x..", ..], "count"}]}
 *
 * frames[0] is the pc inside the API, every other frame a return address (top first), as an
 * fp-walk captures them; every frame must lie in one of the images (PAC bits stripped). The
 * limits below keep a batch from costing more than its size suggests. docs/report-formats.md
 * ("Sample batches") describes the format for client authors.
 */
#ifndef STACKSIFT_SAMPLEBATCH_SAMPLEBATCH_H
#define STACKSIFT_SAMPLEBATCH_SAMPLEBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "crashreport/crashreport.h"

#define SAMPLEBATCH_MAX_SAMPLES 100000   /* samples in one batch */
#define SAMPLEBATCH_MAX_FRAMES 512       /* frames in one stack */
#define SAMPLEBATCH_MAX_IMAGES 4096      /* images in one batch */
#define SAMPLEBATCH_MAX_COUNT 1000000    /* calls one sample may stand for */
#define SAMPLEBATCH_MAX_TAG 200          /* bytes of a tag (free text: the API's name) */
#define SAMPLEBATCH_MAX_ID 128           /* bytes of batch_id, device.id, app.build, ... */
#define SAMPLEBATCH_FIELD_MAX 64         /* bytes of a field path, NUL included */

/* One frame: its runtime address as sent and the image it lies in. */
typedef struct {
    uint64_t addr;  /* runtime address, PAC bits included as sent */
    uint32_t image; /* index into samplebatch.images */
} samplebatch_frame;

/* One sample: a stack and how many calls it stands for. Strings in the arena. */
typedef struct {
    const char *tag;            /* the API, e.g. "CLLocationManager.requestLocation" */
    const char *thread;         /* thread name as sent, NULL if none */
    samplebatch_frame *frames;  /* top first; frames[0] is the pc inside the API */
    uint32_t nframes;           /* 1..SAMPLEBATCH_MAX_FRAMES */
    uint64_t count;             /* 1..SAMPLEBATCH_MAX_COUNT (summed in a canonical batch) */
} samplebatch_sample;

/* A parsed batch; every string NUL-terminated in the arena, NULL when not sent. */
typedef struct {
    const char *batch_id;
    const char *app_name, *bundle_id, *app_version, *build; /* app_name and build never NULL */
    const char *os_name, *os_version, *os_build;
    const char *device_model, *device_id;                   /* device_id never NULL */
    const char *arch;
    crashreport_image *images;  /* uuid always set; end_addr = load_addr + size - 1; in_app
                                   CRASHREPORT_IN_APP_* (UNKNOWN unless sent) */
    size_t nimages;
    samplebatch_sample *samples;
    size_t nsamples;
    uint64_t calls;             /* sum of the counts */
} samplebatch;

/* How a batch is read: as a client sent it, or as the server stored it (canonical: merged
 * counts may exceed SAMPLEBATCH_MAX_COUNT). */
typedef enum { SAMPLEBATCH_SENT, SAMPLEBATCH_STORED } samplebatch_origin;

/*
 * samplebatch_parse - read and check a batch: `len` bytes of JSON (no NUL needed).
 * out     allocated in `a`, valid until arena_free(a).
 * field   on error, the path of the offending field ("samples[12].count",
 *         "images[3].uuid", "format_version"; "" for the document itself); NUL-terminated.
 * Errors  ERR_INVALID (malformed JSON, a missing or malformed field, a frame in no image, a
 *         count out of range: the message starts with the field path), ERR_TOO_LARGE (more
 *         than SAMPLEBATCH_MAX_SAMPLES samples or SAMPLEBATCH_MAX_FRAMES frames in a stack:
 *         named the same way; or the arena's budget ran out).
 * All or nothing: on error *out is NULL.
 */
err_code samplebatch_parse(samplebatch **out, char field[SAMPLEBATCH_FIELD_MAX], const char *json,
                           size_t len, samplebatch_origin origin, arena *a, err_info *err);

/*
 * samplebatch_render_canonical - append `b` as canonical JSON to `out`: the same document
 * with identical samples (same tag and frames; thread names are not kept) merged into one
 * whose count is their sum, in first-seen order, and only the images a frame lies in.
 * Samples: *nstacks (may be NULL) = how many distinct ones were written. The result reads
 * back with samplebatch_parse(..., SAMPLEBATCH_STORED, ...) to the same calls.
 */
void samplebatch_render_canonical(buf *out, size_t *nstacks, const samplebatch *b);

/*
 * samplebatch_canonical - `b` in canonical form as a batch of its own: field for field what
 * samplebatch_parse(..., SAMPLEBATCH_STORED, ...) reads back from
 * samplebatch_render_canonical(b) (merged samples in first-seen order, thread names dropped,
 * only the images a frame lies in, frames' image indexes into those), made without rendering
 * or reading text: the server counts a batch it has just checked without parsing it again.
 * out     allocated in `a`, every string copied (`b` may be freed first).
 * Errors  ERR_TOO_LARGE (a's budget); *out is NULL then.
 */
err_code samplebatch_canonical(samplebatch **out, const samplebatch *b, arena *a, err_info *err);

#endif
