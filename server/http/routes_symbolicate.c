/*
 * routes_symbolicate - POST /api/v1/symbolicate: symbolicate stacks of addresses against
 * the stored dSYMs now, without storing anything (atos over HTTP). The body names the images
 * (UUID, load address) and the stacks; each address gets the image it falls in (the closest
 * load address below it) and its symbols, inlined frames first. Shapes in docs/openapi.yaml.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_internal.h"

#define SYMBOLICATE_MAX_IMAGES 4096
#define SYMBOLICATE_MAX_STACKS 1024
#define SYMBOLICATE_MAX_FRAMES 100000 /* over all stacks */

/* "0x1f", "31" or a JSON integer -> address. */
static bool json_addr(uint64_t *out, const json_t *v)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    const char *s = json_string_value(v);
    if (s == NULL || *s == '\0')
        return false;
    char *end;
    errno = 0;
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    unsigned long long a = strtoull(hex ? s + 2 : s, &end, hex ? 16 : 10);
    if (errno || *end || end == (hex ? s + 2 : s))
        return false;
    *out = a;
    return true;
}

/* A UUID as 32 hex digits with or without dashes -> upper case with dashes. */
static bool uuid_norm(char out[37], const char *s)
{
    char hex[33];
    size_t n = 0;
    for (; s && *s; s++) {
        if (*s == '-')
            continue;
        if (n == 32 || !strchr("0123456789abcdefABCDEF", *s))
            return false;
        hex[n++] = (char)(*s >= 'a' && *s <= 'f' ? *s - 'a' + 'A' : *s);
    }
    if (n != 32)
        return false;
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
    return true;
}

static err_code build_report(crashreport **out, http_request *r, const json_t *body)
{
    err_info *err = &r->err;
    const json_t *images = json_object_get(body, "images"), *stacks = json_object_get(body, "stacks");
    if (!json_is_array(images) || !json_is_array(stacks))
        return err_set(err, ERR_INVALID, "body must be {\"images\":[{\"uuid\",\"arch\","
                       "\"load_address\",\"name\"}],\"stacks\":[[\"0x...\",...]]}");
    size_t ni = json_array_size(images), ns = json_array_size(stacks), total = 0;
    if (ni > SYMBOLICATE_MAX_IMAGES || ns > SYMBOLICATE_MAX_STACKS)
        return err_set(err, ERR_TOO_LARGE, "at most %d images and %d stacks per request",
                       SYMBOLICATE_MAX_IMAGES, SYMBOLICATE_MAX_STACKS);
    crashreport *rep = arena_alloc(r->a, sizeof *rep, err);
    if (rep == NULL)
        return ERR_TOO_LARGE;
    rep->format = CRASHREPORT_FORMAT_JSON;
    rep->kind = CRASHREPORT_KIND_SAMPLE;
    rep->meta.crashed_thread = -1;
    rep->images = arena_alloc_array(r->a, ni ? ni : 1, sizeof *rep->images, err);
    rep->threads = arena_alloc_array(r->a, ns ? ns : 1, sizeof *rep->threads, err);
    if (rep->images == NULL || rep->threads == NULL)
        return ERR_TOO_LARGE;
    rep->nimages = ni;
    for (size_t i = 0; i < ni; i++) {
        const json_t *im = json_array_get(images, i);
        crashreport_image *d = &rep->images[i];
        const char *uuid = json_string_value(json_object_get(im, "uuid"));
        if (!json_is_object(im) || !uuid_norm(d->uuid, uuid) ||
            !json_addr(&d->load_addr, json_object_get(im, "load_address")))
            return err_set(err, ERR_INVALID, "images[%zu] needs a \"uuid\" (32 hex digits) and "
                           "a \"load_address\"", i);
        const char *arch = json_string_value(json_object_get(im, "arch"));
        const char *name = json_string_value(json_object_get(im, "name"));
        d->arch = arch ? arena_strdup(r->a, arch, err) : NULL;
        d->name = name ? arena_strdup(r->a, name, err) : NULL;
        d->user = true;
    }
    rep->nthreads = ns;
    for (size_t t = 0; t < ns; t++) {
        const json_t *st = json_array_get(stacks, t);
        if (!json_is_array(st))
            return err_set(err, ERR_INVALID, "stacks[%zu] must be an array of addresses", t);
        size_t nf = json_array_size(st);
        total += nf;
        if (total > SYMBOLICATE_MAX_FRAMES)
            return err_set(err, ERR_TOO_LARGE, "at most %d addresses per request",
                           SYMBOLICATE_MAX_FRAMES);
        crashreport_thread *th = &rep->threads[t];
        th->index = (uint32_t)t;
        th->frames = arena_alloc_array(r->a, nf ? nf : 1, sizeof *th->frames, err);
        if (th->frames == NULL)
            return ERR_TOO_LARGE;
        th->nframes = nf;
        for (size_t i = 0; i < nf; i++) {
            crashreport_frame *f = &th->frames[i];
            f->index = (uint32_t)i;
            f->image = -1;
            if (!json_addr(&f->addr, json_array_get(st, i)))
                return err_set(err, ERR_INVALID, "stacks[%zu][%zu] is not an address", t, i);
            /* The image loaded closest below the address holds it (sizes are not given). */
            uint64_t best = 0;
            for (size_t k = 0; k < ni; k++) {
                const crashreport_image *im = &rep->images[k];
                uint64_t a = crashreport_strip_pac(f->addr, im->arch);
                if (im->load_addr <= a && (f->image < 0 || im->load_addr > best)) {
                    best = im->load_addr;
                    f->image = (int32_t)k;
                }
            }
            if (f->image >= 0)
                f->image_name = rep->images[f->image].name;
        }
    }
    *out = rep;
    return ERR_OK;
}

enum MHD_Result handle_symbolicate(http_request *r)
{
    if (r->srv->pipe == NULL)
        return respond_error(r, ERR_UNSUPPORTED, "this server does not symbolicate");
    json_error_t je;
    json_t *body = json_loadb((const char *)(r->mem ? r->mem : (uint8_t *)""),
                              (size_t)r->body_bytes, 0, &je);
    if (body == NULL || !json_is_object(body)) {
        json_decref(body);
        return respond_error(r, ERR_INVALID, "body must be a JSON object {\"images\":[...],"
                             "\"stacks\":[[...]]}");
    }
    crashreport *rep = NULL;
    err_code rc = build_report(&rep, r, body);
    json_decref(body);
    if (rc == ERR_OK)
        rc = pipeline_symbolicate(r->srv->pipe, rep, NULL, NULL, r->a, &r->err);
    if (rc != ERR_OK)
        return respond_err(r, &r->err);
    buf out;
    jsonw w;
    json_body_begin(&out, &w);
    jsonw_object_begin(&w);
    jsonw_key(&w, "stacks");
    jsonw_array_begin(&w);
    for (size_t t = 0; t < rep->nthreads; t++) {
        jsonw_array_begin(&w);
        for (size_t i = 0; i < rep->threads[t].nframes; i++) {
            const crashreport_frame *f = &rep->threads[t].frames[i];
            const crashreport_image *im = f->image >= 0 ? &rep->images[f->image] : NULL;
            jsonw_object_begin(&w);
            jsonw_khex(&w, "address", f->addr);
            jsonw_kstr(&w, "image", im ? im->name : NULL);
            jsonw_kstr(&w, "uuid", im ? im->uuid : NULL);
            jsonw_kstr(&w, "status", crashreport_sym_status_name(f->sym_status));
            if (im)
                jsonw_khex(&w, "offset", crashreport_strip_pac(f->addr, im->arch) - im->load_addr);
            jsonw_key(&w, "symbols");
            jsonw_array_begin(&w);
            for (uint32_t k = 0; k < f->nsymbols; k++) {
                const crashreport_symbol *s = &f->symbols[k];
                jsonw_object_begin(&w);
                jsonw_kstr(&w, "function", s->function);
                jsonw_kstr(&w, "mangled", s->mangled);
                jsonw_kstr(&w, "file", s->file);
                jsonw_key(&w, "line");
                if (s->line)
                    jsonw_uint(&w, s->line);
                else
                    jsonw_null(&w);
                jsonw_kbool(&w, "inlined", s->inlined);
                jsonw_kuint(&w, "offset", s->offset);
                jsonw_object_end(&w);
            }
            jsonw_array_end(&w);
            jsonw_object_end(&w);
        }
        jsonw_array_end(&w);
    }
    jsonw_array_end(&w);
    jsonw_key(&w, "missing_uuids");
    jsonw_array_begin(&w);
    for (size_t i = 0; i < rep->nmissing_uuids; i++)
        jsonw_str(&w, rep->missing_uuids[i]);
    jsonw_array_end(&w);
    jsonw_object_end(&w);
    return respond_json(r, 200, &out);
}
