/*
 * admission - load shedding in front of the ingest routes. Internal to server/http.
 *
 * A crash storm (a bad release: every device of a large app crashes within minutes) offers a
 * node more reports than it can parse and commit. Queued, they would wait for ever longer;
 * SDKs that are kept waiting time out and send the same reports again into the same storm.
 * So the node takes at most `max_inflight` ingest requests at once (and at most
 * `max_inflight_bytes` of their bodies; one request is always taken, whatever its size): a
 * request is admitted once its body has been read and holds its place until its answer has
 * been sent. One that finds the budget spent is answered 429 at once on the HTTP thread, with
 * Retry-After: the seconds this node would need to take the requests it refused lately at the
 * rate it has been taking them, ceil(refused / max(admitted, answered)) over the last one to
 * two seconds, from 1 to 60 (60 when it took none: the database is not keeping up at all).
 * What was admitted keeps every guarantee (one deadline, durable before the 202).
 *
 * Counts live under one mutex (a few operations per request). Once a second with refusals,
 * one log line says how many (`ingest_shed`). Thread-safe.
 */
#ifndef STACKSIFT_HTTP_ADMISSION_H
#define STACKSIFT_HTTP_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>

typedef struct admission admission;

/* admission_new - a budget of `max_inflight` requests (>= 1) and `max_inflight_bytes` body
 * bytes. Owned by the caller: admission_free(). */
admission *admission_new(unsigned max_inflight, uint64_t max_inflight_bytes);
void admission_free(admission *a);   /* NULL is a no-op */

/* admission_enter - take a place for a request with a body of `bytes` bytes, at `now_ms`
 * (a monotonic clock in ms). True: admitted, admission_leave() once it is answered. False:
 * refused, *retry_after_s (1..60) is what its 429 tells the client. */
bool admission_enter(unsigned *retry_after_s, admission *a, uint64_t bytes, double now_ms);

/* admission_leave - an admitted request of `bytes` body bytes was answered (any status). */
void admission_leave(admission *a, uint64_t bytes, double now_ms);

/* admission_inflight - requests admitted and not yet answered. */
unsigned admission_inflight(admission *a);

#endif
