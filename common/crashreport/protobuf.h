/*
 * protobuf - a small, bounded reader of the protobuf wire format (proto2/proto3 encoding:
 * https://protobuf.dev/programming-guides/encoding/), enough to walk a message field by
 * field: varints (wire type 0), fixed64 (1), length-delimited (2) and fixed32 (5). Groups
 * (3, 4) are refused. Not for use outside common/crashreport/ (parse_plcrash.c reads
 * PLCrashReporter's reports with it).
 *
 * Bounds, so that hostile bytes cost no more than their length: a varint is at most 10
 * bytes (the 10th may only carry bit 63), a length never reaches past the end of the
 * enclosing message, field numbers are 1 .. 2^29-1, and nested messages are entered only
 * through cr_pb_enter, which refuses more than CR_PB_MAX_DEPTH levels. Every call to
 * cr_pb_next consumes at least one byte, so a walk over n bytes ends after at most n fields.
 * Nothing is allocated: fields point into the caller's buffer.
 */
#ifndef STACKSIFT_CRASHREPORT_PROTOBUF_H
#define STACKSIFT_CRASHREPORT_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define CR_PB_MAX_DEPTH 16        /* nested messages below the top one */
#define CR_PB_MAX_FIELD 536870911 /* 2^29 - 1, the largest field number */

typedef enum {
    CR_PB_VARINT = 0,  /* int32/64, uint32/64, sint32/64, bool, enum */
    CR_PB_FIXED64 = 1, /* fixed64, sfixed64, double */
    CR_PB_LEN = 2,     /* string, bytes, embedded message, packed repeated */
    CR_PB_FIXED32 = 5, /* fixed32, sfixed32, float */
} cr_pb_wire;

/* A cursor over one message's bytes. */
typedef struct {
    const uint8_t *p;    /* next byte to read */
    const uint8_t *end;  /* one past the message's last byte */
    const uint8_t *base; /* first byte of the whole buffer (offsets in messages are from it) */
    unsigned depth;      /* 0 for the top message */
} cr_pb;

/* One field as read from the wire. */
typedef struct {
    uint32_t number;     /* field number, 1 .. CR_PB_MAX_FIELD */
    cr_pb_wire wire;     /* its wire type */
    uint64_t u64;        /* VARINT, FIXED64, FIXED32: the value (fixed32 zero-extended) */
    const uint8_t *data; /* LEN: the payload (borrowed from the buffer); else NULL */
    size_t len;          /* LEN: payload bytes; else 0 */
    size_t offset;       /* where the field's tag starts, from cr_pb.base */
} cr_pb_field;

/* cr_pb_init - a cursor over the `len` bytes at `data` (the top message, depth 0). */
void cr_pb_init(cr_pb *m, const uint8_t *data, size_t len);

/*
 * cr_pb_next - read the next field of `m` into `f` and move past it.
 * Returns 1 (a field), 0 (the message ends here), or -1: ERR_INVALID in `err` with one line
 * saying what is wrong and the offset ("truncated varint at offset 12", "length 900 at
 * offset 40 runs past the end of its message (20 bytes left)", "wire type 3 (group) at
 * offset 7 is not supported", "field number 0 at offset 3"). The caller prefixes the
 * field path it was reading; f->number is set when the tag itself was readable.
 */
int cr_pb_next(cr_pb *m, cr_pb_field *f, err_info *err);

/*
 * cr_pb_enter - a cursor over the embedded message in LEN field `f` of `parent`.
 * Errors  ERR_INVALID if `f` is not length-delimited ("field 3 has wire type 0, want a
 *         message") or the nesting would exceed CR_PB_MAX_DEPTH.
 */
err_code cr_pb_enter(cr_pb *child, const cr_pb *parent, const cr_pb_field *f, err_info *err);

/*
 * cr_pb_varint - decode one varint from [*p, end): the value in *out, *p moved past it.
 * false (nothing moved) if it is truncated or longer than 10 bytes / 64 bits.
 */
bool cr_pb_varint(uint64_t *out, const uint8_t **p, const uint8_t *end);

#endif
