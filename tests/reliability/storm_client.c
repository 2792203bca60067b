/*
 * storm_client - the load of tests/reliability/test_storm.py: HTTP/1.1 POSTs over `-c`
 * keep-alive connections to 127.0.0.1, either on a fixed schedule (`-r` requests a second,
 * open loop: request i is due at start + i / rate whether or not earlier ones were answered,
 * and is timed from then, so time spent waiting for a free connection counts) or, with -r 0,
 * each connection sending its next request as soon as its answer came (closed loop: the
 * sustainable rate). One thread, epoll, no library: the client must cost little next to the
 * server on a 2-core machine.
 *
 *   storm_client -p PORT -u PATH -b BODYFILE [-H "Name: value"]... [-c CONNECTIONS]
 *                [-r RATE] [-d SECONDS] [-t TIMEOUT_S] [-s SALT] [-i IDS_FILE]
 *
 * The body's first "@@@@@@@@" is replaced, per request, by 8 upper-case hex digits: SALT
 * (0-255) then the request's number, so that every report is a new one (an Apple report's
 * Incident Identifier). A request is a timeout when it finds no free connection within
 * TIMEOUT_S of being due or gets no complete answer within TIMEOUT_S of being sent; a reset
 * when the connection ends (EOF, ECONNRESET) while its answer is incomplete. The ids of 2xx
 * answers ("id":"...") go to IDS_FILE, one a line. Prints one JSON object on stdout: counts by
 * status, timeouts, resets, 429s without Retry-After / X-Sentry-Rate-Limits, latencies from
 * due and from sent (p50, p90, p99, max in ms), the answered rates.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IN_CAP 65536
#define MAX_HEADERS 16
#define PLACEHOLDER "@@@@@@@@"

enum { C_CONNECTING, C_IDLE, C_BUSY };

typedef struct {
    int fd;
    int state;
    long seq;                 /* the request in progress (C_BUSY) */
    size_t out_off;           /* bytes of the request sent */
    char *out;                /* the request being sent (req_len bytes) */
    char in[IN_CAP];
    size_t in_len;
    bool want_out;            /* EPOLLOUT registered */
    bool queued;              /* has an entry in the free ring */
} conn;

/* What became of request i. */
enum { R_NONE = 0, R_ANSWERED, R_TIMEOUT, R_UNSENT, R_RESET };

typedef struct {
    double due_ms, sent_ms, done_ms;
    short status;
    unsigned char outcome;
} result;

static struct {
    int port;
    const char *path;
    const char *headers[MAX_HEADERS];
    int nheaders;
    int nconns;
    double rate, duration_s, timeout_ms;
    unsigned salt;
    FILE *ids;
    char *tmpl;               /* the whole request, placeholder included */
    size_t req_len, ph_off;   /* its length, the placeholder's offset (SIZE_MAX: none) */
    int ep;
    conn *conns;
    int *ring;                /* free connections, first in first out: each is used in turn,
                                 none sits idle into the server's keep-alive timeout */
    int ring_head, ring_len, nfree;   /* nfree: connections idle now (entries may be stale) */
    result *res;
    long nres, capres;
    long idle_closed, connect_errors, malformed;
    long no_retry_after, no_rate_limits, retry_min, retry_max;
    char rate_limits_seen[128];
} g;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
    fprintf(stderr, "storm_client: %s: %s\n", what, strerror(errno));
    exit(2);
}

static result *res_at(long seq)
{
    while (seq >= g.capres) {
        long cap = g.capres ? g.capres * 2 : 65536;
        g.res = realloc(g.res, (size_t)cap * sizeof *g.res);
        if (!g.res)
            die("realloc");
        memset(g.res + g.capres, 0, (size_t)(cap - g.capres) * sizeof *g.res);
        g.capres = cap;
    }
    if (seq >= g.nres)
        g.nres = seq + 1;
    return &g.res[seq];
}

static void watch(conn *c, bool out)
{
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(g.ep, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        die("epoll_ctl");
    c->want_out = out;
}

static void conn_open(conn *c)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        die("socket");
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS)
        die("connect");
    c->state = C_CONNECTING;
    c->in_len = 0;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(g.ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
        die("epoll_ctl add");
    c->want_out = true;
}

/* Close and connect again; the request in progress, if any, ends as `outcome`. */
static void conn_reopen(conn *c, int outcome, double t)
{
    static int told;
    if (c->state == C_BUSY && told < 5) {   /* what a lost request looked like */
        told++;
        fprintf(stderr, "storm_client: request %ld %s: %zu of %zu bytes sent, %zu answer bytes "
                "in, %.1f ms after it was sent (errno: %s)\n", c->seq,
                outcome == R_TIMEOUT ? "timed out" : "lost", c->out_off, g.req_len, c->in_len,
                t - res_at(c->seq)->sent_ms, strerror(errno));
    }
    if (c->state == C_BUSY) {
        result *r = res_at(c->seq);
        r->outcome = (unsigned char)outcome;
        r->done_ms = t;
    } else if (c->state == C_IDLE) {
        g.idle_closed++;   /* its ring entry stays, skipped until it is idle again */
        g.nfree--;
    }
    close(c->fd);
    conn_open(c);
}

static void conn_free(conn *c)
{
    c->state = C_IDLE;
    c->in_len = 0;
    g.nfree++;
    if (!c->queued) {
        c->queued = true;
        g.ring[(g.ring_head + g.ring_len++) % g.nconns] = (int)(c - g.conns);
    }
}

/* The connection idle longest (g.nfree > 0). */
static conn *conn_take(void)
{
    for (;;) {
        conn *c = &g.conns[g.ring[g.ring_head]];
        g.ring_head = (g.ring_head + 1) % g.nconns;
        g.ring_len--;
        c->queued = false;
        if (c->state == C_IDLE) {
            g.nfree--;
            return c;
        }
    }
}

static void conn_flush(conn *c, double t)
{
    while (c->out_off < g.req_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, g.req_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->want_out)
                watch(c, true);
            return;
        }
        conn_reopen(c, R_RESET, t);
        return;
    }
    if (c->want_out)
        watch(c, false);
}

static void conn_send(conn *c, long seq, double due, double t)
{
    result *r = res_at(seq);
    r->due_ms = due;
    r->sent_ms = t;
    c->seq = seq;
    c->state = C_BUSY;
    c->out_off = 0;
    c->in_len = 0;
    memcpy(c->out, g.tmpl, g.req_len);
    if (g.ph_off != SIZE_MAX) {
        char hex[9];
        snprintf(hex, sizeof hex, "%02X%06lX", g.salt & 0xff, (unsigned long)seq & 0xffffff);
        memcpy(c->out + g.ph_off, hex, 8);
    }
    conn_flush(c, t);
}

/* The value of header `name` in the head [h, h+n), or NULL; *len set. */
static const char *header_value(const char *h, size_t n, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (const char *p = h; p < h + n;) {
        const char *eol = memmem(p, (size_t)(h + n - p), "\r\n", 2);
        if (!eol)
            eol = h + n;
        if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            *len = (size_t)(eol - v);
            return v;
        }
        p = eol + 2;
    }
    return NULL;
}

/* A complete answer in c->in: record it, free the connection (or reopen it). */
static void conn_answered(conn *c, double t)
{
    char *sep = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!sep)
        return;
    size_t head = (size_t)(sep - c->in) + 4, vl;
    const char *cl = header_value(c->in, head, "Content-Length", &vl);
    size_t body = cl ? strtoul(cl, NULL, 10) : 0;
    if (c->in_len < head + body) {
        if (head + body > IN_CAP) {   /* an answer this client cannot hold */
            g.malformed++;
            conn_reopen(c, R_RESET, t);
        }
        return;
    }
    result *r = res_at(c->seq);
    r->outcome = R_ANSWERED;
    r->done_ms = t;
    r->status = (short)atoi(c->in + 9);   /* "HTTP/1.1 202" */
    if (r->status == 429) {
        const char *ra = header_value(c->in, head, "Retry-After", &vl);
        if (!ra) {
            g.no_retry_after++;
        } else {
            long s = strtol(ra, NULL, 10);
            if (g.retry_min == 0 || s < g.retry_min)
                g.retry_min = s;
            if (s > g.retry_max)
                g.retry_max = s;
        }
        const char *rl = header_value(c->in, head, "X-Sentry-Rate-Limits", &vl);
        if (!rl)
            g.no_rate_limits++;
        else if (!g.rate_limits_seen[0])
            snprintf(g.rate_limits_seen, sizeof g.rate_limits_seen, "%.*s", (int)vl, rl);
    }
    if (r->status >= 200 && r->status < 300 && g.ids) {
        const char *b = c->in + head;
        const char *id = memmem(b, body, "\"id\":\"", 6);
        if (id) {
            id += 6;
            const char *end = memchr(id, '"', (size_t)(b + body - id));
            if (end)
                fprintf(g.ids, "%.*s\n", (int)(end - id), id);
        }
    }
    const char *connhdr = header_value(c->in, head, "Connection", &vl);
    if (connhdr && vl >= 5 && strncasecmp(connhdr, "close", 5) == 0) {
        c->state = C_IDLE;   /* answered: reopening it is no idle close */
        close(c->fd);
        conn_open(c);
        return;
    }
    conn_free(c);
}

static void conn_event(conn *c, uint32_t ev, double t)
{
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || (ev & (EPOLLERR | EPOLLHUP))) {
            g.connect_errors++;
            close(c->fd);
            conn_open(c);
            return;
        }
        struct sockaddr_in peer;
        socklen_t plen = sizeof peer;
        /* an event left from the descriptor this one replaced: wait for its own */
        if (getpeername(c->fd, (struct sockaddr *)&peer, &plen) != 0)
            return;
        if (ev & EPOLLOUT) {
            watch(c, false);
            conn_free(c);
        }
        return;
    }
    if ((ev & EPOLLOUT) && c->state == C_BUSY)
        conn_flush(c, t);
    if (!(ev & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        return;
    for (;;) {
        if (c->in_len == IN_CAP) {
            g.malformed++;
            conn_reopen(c, R_RESET, t);
            return;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        /* EOF or an error: an answer complete before it counts (the server may close after
         * answering); else the request in progress is lost */
        if (c->state == C_BUSY)
            conn_answered(c, t);
        if (c->state == C_CONNECTING)   /* answered with Connection: close: reopened */
            return;
        conn_reopen(c, R_RESET, t);
        return;
    }
    if (c->state == C_BUSY)
        conn_answered(c, t);
    else
        c->in_len = 0;   /* bytes nobody asked for */
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* "name":{"p50":..,"p90":..,"p99":..,"max":..} of v[0..n) (sorted here), in ms. */
static void print_pcts(const char *name, double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
#define PCT(q) (n ? v[(long)((double)(n - 1) * (q))] : 0.0)
    printf("\"%s\":{\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,\"max\":%.2f}", name, PCT(0.5),
           PCT(0.9), PCT(0.99), n ? v[n - 1] : 0.0);
#undef PCT
}

static void usage(void)
{
    fprintf(stderr, "usage: storm_client -p PORT -u PATH -b BODYFILE [-H 'Name: value']... "
                    "[-c CONNECTIONS] [-r RATE] [-d SECONDS] [-t TIMEOUT_S] [-s SALT] "
                    "[-i IDS_FILE]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *body_path = NULL, *ids_path = NULL;
    g.nconns = 8;
    g.duration_s = 5;
    g.timeout_ms = 10000;
    int opt;
    while ((opt = getopt(argc, argv, "p:u:b:H:c:r:d:t:s:i:")) != -1) {
        switch (opt) {
        case 'p': g.port = atoi(optarg); break;
        case 'u': g.path = optarg; break;
        case 'b': body_path = optarg; break;
        case 'H':
            if (g.nheaders == MAX_HEADERS)
                usage();
            g.headers[g.nheaders++] = optarg;
            break;
        case 'c': g.nconns = atoi(optarg); break;
        case 'r': g.rate = atof(optarg); break;
        case 'd': g.duration_s = atof(optarg); break;
        case 't': g.timeout_ms = atof(optarg) * 1000; break;
        case 's': g.salt = (unsigned)atoi(optarg); break;
        case 'i': ids_path = optarg; break;
        default: usage();
        }
    }
    if (g.port <= 0 || !g.path || !body_path || g.nconns < 1 || g.duration_s <= 0)
        usage();
    FILE *bf = fopen(body_path, "rb");
    if (!bf)
        die(body_path);
    fseek(bf, 0, SEEK_END);
    long blen = ftell(bf);
    fseek(bf, 0, SEEK_SET);
    char *body = malloc((size_t)blen + 1);
    if (!body || fread(body, 1, (size_t)blen, bf) != (size_t)blen)
        die("reading the body");
    fclose(bf);
    if (ids_path && !(g.ids = fopen(ids_path, "w")))
        die(ids_path);

    /* the request, as one template */
    size_t cap = (size_t)blen + 4096;
    g.tmpl = malloc(cap);
    int hl = snprintf(g.tmpl, cap, "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n", g.path, g.port);
    for (int i = 0; i < g.nheaders; i++)
        hl += snprintf(g.tmpl + hl, cap - (size_t)hl, "%s\r\n", g.headers[i]);
    hl += snprintf(g.tmpl + hl, cap - (size_t)hl, "Content-Length: %ld\r\n\r\n", blen);
    memcpy(g.tmpl + hl, body, (size_t)blen);
    g.req_len = (size_t)hl + (size_t)blen;
    char *ph = memmem(body, (size_t)blen, PLACEHOLDER, 8);
    g.ph_off = ph ? (size_t)hl + (size_t)(ph - body) : SIZE_MAX;

    g.ep = epoll_create1(EPOLL_CLOEXEC);
    if (g.ep < 0)
        die("epoll_create1");
    g.conns = calloc((size_t)g.nconns, sizeof *g.conns);
    g.ring = calloc((size_t)g.nconns, sizeof *g.ring);
    for (int i = 0; i < g.nconns; i++) {
        g.conns[i].out = malloc(g.req_len);
        conn_open(&g.conns[i]);
    }
    struct epoll_event evs[256];
    /* every connection open before the clock starts */
    double t_conn = now_ms();
    while (g.nfree < g.nconns && now_ms() - t_conn < 10000) {
        int n = epoll_wait(g.ep, evs, 256, 100);
        for (int i = 0; i < n; i++)
            conn_event(evs[i].data.ptr, evs[i].events, now_ms());
    }

    bool open_loop = g.rate > 0;
    double t0 = now_ms(), end_ms = t0 + g.duration_s * 1000;
    long total = open_loop ? (long)(g.rate * g.duration_s) : -1;   /* -1: until end_ms */
    long next = 0;
    double last_sweep = t0;
    for (;;) {
        double t = now_ms();
        /* dispatch what is due to free connections */
        for (;;) {
            if (open_loop ? next >= total : t >= end_ms)
                break;
            double due = open_loop ? t0 + (double)next * 1000.0 / g.rate : t;
            if (due > t)
                break;
            if (open_loop && t - due > g.timeout_ms) {   /* no connection free in time */
                result *r = res_at(next);
                r->due_ms = due;
                r->outcome = R_UNSENT;
                next++;
                continue;
            }
            if (g.nfree == 0)
                break;
            conn_send(conn_take(), next, due, t);
            next++;
        }
        bool scheduling = open_loop ? next < total : t < end_ms;
        int busy = 0;
        for (int i = 0; i < g.nconns; i++)
            busy += g.conns[i].state == C_BUSY;
        if (!scheduling && busy == 0)
            break;
        if (t - last_sweep >= 50) {   /* answers overdue */
            last_sweep = t;
            for (int i = 0; i < g.nconns; i++) {
                conn *c = &g.conns[i];
                if (c->state == C_BUSY && t - res_at(c->seq)->sent_ms > g.timeout_ms)
                    conn_reopen(c, R_TIMEOUT, t);
            }
        }
        int wait = 50;
        if (scheduling && open_loop && g.nfree > 0) {
            double due = t0 + (double)next * 1000.0 / g.rate - t;
            wait = due <= 0 ? 0 : due < 50 ? (int)due + 1 : 50;
        }
        int n = epoll_wait(g.ep, evs, 256, wait);
        double t2 = now_ms();
        for (int i = 0; i < n; i++)
            conn_event(evs[i].data.ptr, evs[i].events, t2);
    }
    double elapsed_s = (now_ms() - t0) / 1000.0;
    if (open_loop)
        for (long s = next; s < total; s++)   /* never reached (cannot happen: counted) */
            res_at(s)->outcome = R_UNSENT;

    long answered = 0, timeouts = 0, unsent = 0, resets = 0, ok = 0, shed = 0;
    long counts[600] = {0};
    double *due_lat = malloc((size_t)(g.nres + 1) * sizeof(double));
    double *sent_lat = malloc((size_t)(g.nres + 1) * sizeof(double));
    for (long s = 0; s < g.nres; s++) {
        result *r = &g.res[s];
        switch (r->outcome) {
        case R_ANSWERED:
            due_lat[answered] = r->done_ms - r->due_ms;
            sent_lat[answered] = r->done_ms - r->sent_ms;
            answered++;
            if (r->status >= 0 && r->status < 600)
                counts[r->status]++;
            ok += r->status >= 200 && r->status < 300;
            shed += r->status == 429;
            break;
        case R_TIMEOUT: timeouts++; break;
        case R_UNSENT: unsent++; break;
        case R_RESET: resets++; break;
        default: break;
        }
    }
    double secs = open_loop ? g.duration_s : elapsed_s;
    printf("{\"connections\":%d,\"rate\":%.1f,\"duration_s\":%.2f,\"elapsed_s\":%.2f,"
           "\"requests\":%ld,\"answered\":%ld,\"timeouts\":%ld,\"unsent\":%ld,\"resets\":%ld,"
           "\"idle_closed\":%ld,\"connect_errors\":%ld,\"malformed\":%ld,\"status\":{",
           g.nconns, g.rate, secs, elapsed_s, g.nres, answered, timeouts, unsent, resets,
           g.idle_closed, g.connect_errors, g.malformed);
    bool first = true;
    for (int s = 0; s < 600; s++)
        if (counts[s]) {
            printf("%s\"%d\":%ld", first ? "" : ",", s, counts[s]);
            first = false;
        }
    printf("},\"accepted_per_s\":%.1f,\"shed_per_s\":%.1f,\"no_retry_after\":%ld,"
           "\"no_rate_limits\":%ld,\"retry_after_min\":%ld,\"retry_after_max\":%ld,"
           "\"rate_limits_example\":\"%s\",",
           (double)ok / secs, (double)shed / secs, g.no_retry_after, g.no_rate_limits,
           g.retry_min, g.retry_max, g.rate_limits_seen);
    print_pcts("from_due_ms", due_lat, answered);
    printf(",");
    print_pcts("from_sent_ms", sent_lat, answered);
    printf("}\n");
    if (g.ids)
        fclose(g.ids);
    for (int i = 0; i < g.nconns; i++) {
        close(g.conns[i].fd);
        free(g.conns[i].out);
    }
    close(g.ep);
    free(due_lat);
    free(sent_lat);
    free(g.res);
    free(g.ring);
    free(g.conns);
    free(g.tmpl);
    free(body);
    return 0;
}
