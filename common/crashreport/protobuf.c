/*
 * protobuf.c - the bounded wire-format reader (protobuf.h).
 */
#include "crashreport/protobuf.h"

#include <string.h>

void cr_pb_init(cr_pb *m, const uint8_t *data, size_t len)
{
    m->p = data;
    m->end = data + len;
    m->base = data;
    m->depth = 0;
}

bool cr_pb_varint(uint64_t *out, const uint8_t **p, const uint8_t *end)
{
    const uint8_t *s = *p;
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (s + i >= end)
            return false;
        uint8_t b = s[i];
        /* the 10th byte holds bit 63 only: anything more overflows 64 bits */
        if (i == 9 && b > 1)
            return false;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if ((b & 0x80) == 0) {
            *out = v;
            *p = s + i + 1;
            return true;
        }
    }
    return false;
}

static size_t off_of(const cr_pb *m, const uint8_t *p)
{
    return (size_t)(p - m->base);
}

int cr_pb_next(cr_pb *m, cr_pb_field *f, err_info *err)
{
    memset(f, 0, sizeof *f);
    if (m->p >= m->end)
        return 0;
    const uint8_t *p = m->p;
    f->offset = off_of(m, p);
    uint64_t tag;
    if (!cr_pb_varint(&tag, &p, m->end)) {
        err_set(err, ERR_INVALID, "%s tag at offset %zu", m->end - p < 10 ? "truncated" : "overlong",
                f->offset);
        return -1;
    }
    uint64_t number = tag >> 3;
    if (number == 0 || number > CR_PB_MAX_FIELD) {
        err_set(err, ERR_INVALID, "field number %llu at offset %zu", (unsigned long long)number,
                f->offset);
        return -1;
    }
    f->number = (uint32_t)number;
    f->wire = (cr_pb_wire)(tag & 7);
    switch (tag & 7) {
    case CR_PB_VARINT: {
        const uint8_t *v = p;
        if (!cr_pb_varint(&f->u64, &p, m->end)) {
            err_set(err, ERR_INVALID, "%s varint at offset %zu",
                    m->end - v < 10 ? "truncated" : "overlong", off_of(m, v));
            return -1;
        }
        break;
    }
    case CR_PB_FIXED64:
    case CR_PB_FIXED32: {
        size_t n = (tag & 7) == CR_PB_FIXED64 ? 8 : 4;
        if ((size_t)(m->end - p) < n) {
            err_set(err, ERR_INVALID, "truncated fixed%zu at offset %zu", n * 8, off_of(m, p));
            return -1;
        }
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++) /* little-endian on the wire */
            v |= (uint64_t)p[i] << (8 * i);
        f->u64 = v;
        p += n;
        break;
    }
    case CR_PB_LEN: {
        const uint8_t *l = p;
        uint64_t len;
        if (!cr_pb_varint(&len, &p, m->end)) {
            err_set(err, ERR_INVALID, "%s length at offset %zu",
                    m->end - l < 10 ? "truncated" : "overlong", off_of(m, l));
            return -1;
        }
        size_t left = (size_t)(m->end - p);
        if (len > left) {
            err_set(err, ERR_INVALID, "length %llu at offset %zu runs past the end of its "
                    "message (%zu bytes left)", (unsigned long long)len, off_of(m, l), left);
            return -1;
        }
        f->data = p;
        f->len = (size_t)len;
        p += len;
        break;
    }
    default:
        err_set(err, ERR_INVALID, "wire type %u%s at offset %zu is not supported",
                (unsigned)(tag & 7), (tag & 7) == 3 || (tag & 7) == 4 ? " (group)" : "", f->offset);
        return -1;
    }
    m->p = p;
    return 1;
}

err_code cr_pb_enter(cr_pb *child, const cr_pb *parent, const cr_pb_field *f, err_info *err)
{
    if (f->wire != CR_PB_LEN)
        return err_set(err, ERR_INVALID, "field %u at offset %zu has wire type %u, want a message",
                       f->number, f->offset, (unsigned)f->wire);
    if (parent->depth >= CR_PB_MAX_DEPTH)
        return err_set(err, ERR_INVALID, "field %u at offset %zu nests messages more than %d deep",
                       f->number, f->offset, CR_PB_MAX_DEPTH);
    child->p = f->data;
    child->end = f->data + f->len;
    child->base = parent->base;
    child->depth = parent->depth + 1;
    return ERR_OK;
}
