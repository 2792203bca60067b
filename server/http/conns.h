/*
 * conns - every open HTTP connection, and the reaper that closes the ones that hold a slot
 * without using it. Internal to server/http.
 *
 * libmicrohttpd 0.9.75 has one inactivity timeout for everything, so a client that sends a
 * header line every few seconds (slowloris), trickles a body, or half-closes in the middle
 * of a body keeps its connection for ever. The reaper thread looks at every connection four
 * times a second and shuts down the socket (shutdown(2); libmicrohttpd then sees the end of
 * the stream and closes it itself) of one that
 *   - has not sent complete request headers within header_timeout_ms of connecting or of
 *     its previous answer (idle keep-alive connections included);
 *   - is sending a body below min_body_rate bytes/s on average, once header_timeout_ms of
 *     body time have passed;
 *   - has half-closed (FIN) before its declared body was complete.
 * Connections answered before their body was read close with a lingering close
 * (conns_request_linger): one more thread drains and closes them.
 * The registry is a list under one mutex; a connection's slot is freed in libmicrohttpd's
 * "closed" notification, which comes before it closes the descriptor, so the reaper never
 * shuts down a descriptor number that another connection reuses.
 */
#ifndef STACKSIFT_HTTP_CONNS_H
#define STACKSIFT_HTTP_CONNS_H

#include <microhttpd.h>
#include <stdint.h>

typedef struct conns conns;
typedef struct conn_slot conn_slot;

/* Why the reaper closed a connection (a metrics label). */
typedef enum {
    CONN_CLOSED_HEADER_TIMEOUT,
    CONN_CLOSED_SLOW_BODY,
    CONN_CLOSED_HALF_CLOSED,
    CONN_CLOSED_SHUTDOWN,
    CONN_CLOSED_NREASONS
} conn_closed_reason;

/* conns_reason_name - "header_timeout", "slow_body", "half_closed", "shutdown". */
const char *conns_reason_name(conn_closed_reason reason);

/* conns_new - an empty registry and its reaper thread. Times in ms, rate in bytes/s.
 * Owned by the caller: conns_free() (after libmicrohttpd has stopped). */
conns *conns_new(uint32_t header_timeout_ms, uint64_t min_body_rate);
void conns_free(conns *c);                         /* NULL is a no-op */

/* conns_notify - MHD_OPTION_NOTIFY_CONNECTION's callback (cls = the conns). */
void conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                  enum MHD_ConnectionNotificationCode toe);

/* conns_slot - the slot of `conn` (NULL if libmicrohttpd did not report it). */
conn_slot *conns_slot(struct MHD_Connection *conn);

/* The request on a connection, as the transport sees it (NULL slots are ignored):
 * headers complete (`declared` body bytes, UINT64_MAX when unknown), `bytes` more body bytes
 * received, the whole request received (handling or answering), the answer sent. */
void conns_request_begin(conn_slot *s, uint64_t declared);
void conns_request_body(conn_slot *s, uint64_t bytes);
void conns_request_handling(conn_slot *s);

/* conns_request_linger - the request was answered before its body was read, and
 * libmicrohttpd will close the connection: when it does, the socket stays open a little
 * longer (lingering close, as nginx does): FIN after the answer, then what the client still
 * sends is read and discarded, for up to 5 s without a byte, 30 s and 64 MiB in all, before
 * the descriptor is closed. Without it, closing with unread bytes sends a reset, and a client
 * that writes its whole body before reading never sees the answer (401, 413). */
void conns_request_linger(conn_slot *s);
void conns_request_end(conn_slot *s);

/* conns_close_idle - on shutdown: close every connection that has no request in progress
 * (it has nothing to finish). Returns how many. */
unsigned conns_close_idle(conns *c);

/* conns_open - connections open now. */
unsigned conns_open(conns *c);

#endif
