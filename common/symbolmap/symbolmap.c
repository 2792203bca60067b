/*
 * symbolmap - BCSymbolMaps and UUID maps (symbolmap.h). A parsed map is one copy of the file
 * with each newline turned into a NUL, and the offset of every line.
 */
#include "symbolmap/symbolmap.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/xalloc.h"

#define HIDDEN "__hidden#"
#define HIDDEN_LEN 9u
#define MAX_INDEX_DIGITS 10u

struct symbolmap {
    char *bytes;       /* the file after the header line, newlines replaced by NUL */
    uint32_t *offsets; /* start of line i in bytes */
    uint32_t count;
};

bool symbolmap_test(const uint8_t *data, size_t len)
{
    size_t n = sizeof SYMBOLMAP_HEADER - 1;
    return len >= n && memcmp(data, SYMBOLMAP_HEADER, n) == 0;
}

err_code symbolmap_parse(symbolmap **out, const uint8_t *data, size_t len, uint64_t max_bytes,
                         err_info *err)
{
    *out = NULL;
    if (max_bytes > 0 && len > max_bytes)
        return err_set(err, ERR_TOO_LARGE, "BCSymbolMap has %zu bytes, over the limit of %llu",
                       len, (unsigned long long)max_bytes);
    if (len >= UINT32_MAX)
        return err_set(err, ERR_TOO_LARGE, "BCSymbolMap has %zu bytes, over 4 GiB", len);
    if (!symbolmap_test(data, len))
        return err_set(err, ERR_INVALID, "not a BCSymbolMap: the first line is not "
                       "\"" SYMBOLMAP_HEADER "2.0\"");
    const uint8_t *nl = memchr(data, '\n', len);
    if (nl == NULL)
        return err_set(err, ERR_INVALID, "BCSymbolMap is cut short: its header line has no "
                       "newline");
    size_t hlen = sizeof SYMBOLMAP_HEADER - 1;
    size_t vlen = (size_t)(nl - data) - hlen;
    if (vlen > 0 && data[hlen + vlen - 1] == '\r')
        vlen--;
    if (vlen == 0 || data[hlen] != '2' || (vlen > 1 && data[hlen + 1] != '.'))
        return err_set(err, ERR_UNSUPPORTED, "BCSymbolMap version \"%.*s\" is not supported "
                       "(version 2.x is)", (int)(vlen < 32 ? vlen : 32),
                       (const char *)data + hlen);
    const uint8_t *body = nl + 1;
    size_t blen = len - (size_t)(body - data);
    if (memchr(body, '\0', blen) != NULL)
        return err_set(err, ERR_INVALID, "BCSymbolMap holds a NUL byte at offset %zu",
                       (size_t)((const uint8_t *)memchr(body, '\0', blen) - data));
    if (blen > 0 && body[blen - 1] != '\n')
        return err_set(err, ERR_INVALID, "BCSymbolMap is cut short: its last line (after "
                       "byte %zu) has no newline", len - 1);
    size_t lines = 0;
    for (const uint8_t *p = body, *end = body + blen; p < end; lines++) {
        const uint8_t *e = memchr(p, '\n', (size_t)(end - p));
        p = e + 1;
    }
    if (lines >= UINT32_MAX)
        return err_set(err, ERR_TOO_LARGE, "BCSymbolMap has %zu lines", lines);
    symbolmap *m = xcalloc(1, sizeof *m);
    m->bytes = xmalloc(blen + 1);
    memcpy(m->bytes, body, blen);
    m->bytes[blen] = '\0';
    m->offsets = xcalloc(lines ? lines : 1, sizeof *m->offsets);
    size_t off = 0;
    for (size_t i = 0; i < lines; i++) {
        char *e = memchr(m->bytes + off, '\n', blen - off);
        m->offsets[i] = (uint32_t)off;
        *e = '\0';
        if (e > m->bytes + off && e[-1] == '\r')
            e[-1] = '\0';
        off = (size_t)(e - m->bytes) + 1;
    }
    m->count = (uint32_t)lines;
    *out = m;
    return ERR_OK;
}

uint32_t symbolmap_count(const symbolmap *m)
{
    return m ? m->count : 0;
}

const char *symbolmap_line(const symbolmap *m, uint32_t n, size_t *len)
{
    if (m == NULL || n >= m->count)
        return NULL;
    const char *s = m->bytes + m->offsets[n];
    if (len)
        *len = strlen(s);
    return s;
}

void symbolmap_free(symbolmap *m)
{
    if (m == NULL)
        return;
    free(m->bytes);
    free(m->offsets);
    free(m);
}

/* At s[0..len): "#N_" with 1..10 digits? *index = N, *used = bytes through the '_'. */
static bool parse_index(const char *s, size_t len, uint64_t *index, size_t *used)
{
    size_t i = 0;
    uint64_t v = 0;
    while (i < len && i < MAX_INDEX_DIGITS && s[i] >= '0' && s[i] <= '9')
        v = v * 10 + (uint64_t)(s[i++] - '0');
    if (i == 0 || i >= len || s[i] != '_')
        return false;
    *index = v;
    *used = i + 1;
    return true;
}

static void note(symbolmap_reveal_stats *stats, uint64_t index, bool found)
{
    if (!stats)
        return;
    stats->hidden++;
    stats->revealed += found;
    if (index + 1 > stats->max_index)
        stats->max_index = index + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(index + 1);
}

bool symbolmap_has_hidden(const char *s, size_t len)
{
    /* "_hidden#" is in both forms: "__hidden#N_" anywhere, "_hidden#N_" as a whole string */
    for (const char *p = s, *end = s + len; p + 8 <= end;) {
        const char *h = memchr(p, '_', (size_t)(end - p));
        if (h == NULL || h + 8 > end)
            return false;
        if (memcmp(h, "_hidden#", 8) == 0) {
            uint64_t idx;
            size_t used;
            if (parse_index(h + 8, (size_t)(end - h - 8), &idx, &used) &&
                ((h > s && h[-1] == '_') || (h == s && 8 + used == len)))
                return true;
        }
        p = h + 1;
    }
    return false;
}

bool symbolmap_reveal(buf *out, const symbolmap *m, const char *s, size_t len,
                      symbolmap_reveal_stats *stats)
{
    uint64_t idx;
    size_t used;
    /* a whole symbol-table name, its Mach-O underscore stripped by debuginfo */
    if (len > 8 && memcmp(s, "_hidden#", 8) == 0 && parse_index(s + 8, len - 8, &idx, &used) &&
        8 + used == len) {
        size_t n;
        const char *line = idx < UINT32_MAX ? symbolmap_line(m, (uint32_t)idx, &n) : NULL;
        note(stats, idx, line != NULL);
        if (line == NULL)
            buf_append(out, s, len);
        else if (n > 0 && line[0] == '_')
            buf_append(out, line + 1, n - 1);
        else
            buf_append(out, line, n);
        return true;
    }
    bool any = false;
    size_t done = 0;
    for (size_t i = 0; i + HIDDEN_LEN < len;) {
        const char *h = memchr(s + i, '_', len - i);
        if (h == NULL)
            break;
        i = (size_t)(h - s);
        if (i + HIDDEN_LEN >= len)
            break;
        if (memcmp(h, HIDDEN, HIDDEN_LEN) != 0 ||
            !parse_index(h + HIDDEN_LEN, len - i - HIDDEN_LEN, &idx, &used)) {
            i++;
            continue;
        }
        size_t n;
        const char *line = idx < UINT32_MAX ? symbolmap_line(m, (uint32_t)idx, &n) : NULL;
        note(stats, idx, line != NULL);
        any = true;
        buf_append(out, s + done, i - done);
        if (line != NULL)
            buf_append(out, line, n);
        else
            buf_append(out, h, HIDDEN_LEN + used);
        i += HIDDEN_LEN + used;
        done = i;
    }
    if (any)
        buf_append(out, s + done, len - done);
    return any;
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool symbolmap_uuid_normalize(char out[37], const char *s, size_t len)
{
    char hex[32];
    size_t n = 0;
    if (len == 36) {
        for (size_t i = 0; i < 36; i++) {
            bool dash = i == 8 || i == 13 || i == 18 || i == 23;
            if (dash ? s[i] != '-' : !is_hex(s[i]))
                return false;
            if (!dash)
                hex[n++] = s[i];
        }
    } else if (len == 32) {
        for (size_t i = 0; i < 32; i++) {
            if (!is_hex(s[i]))
                return false;
            hex[n++] = s[i];
        }
    } else {
        return false;
    }
    size_t o = 0;
    for (size_t i = 0; i < 32; i++) {
        if (i == 8 || i == 12 || i == 16 || i == 20)
            out[o++] = '-';
        char c = hex[i];
        out[o++] = (char)(c >= 'a' && c <= 'f' ? c - 'a' + 'A' : c);
    }
    out[36] = '\0';
    return true;
}

bool symbolmap_uuid_from_name(char out[37], const char *name, const char *ext)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t blen = strlen(base), elen = strlen(ext);
    if (blen <= elen || strcasecmp(base + blen - elen, ext) != 0)
        return false;
    return symbolmap_uuid_normalize(out, base, blen - elen);
}

/* Past a UTF-8 BOM and blanks. */
static const uint8_t *skip_lead(const uint8_t *p, const uint8_t *end)
{
    if (end - p >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
        p += 3;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

bool symbolmap_uuidmap_test(const uint8_t *data, size_t len)
{
    if (len == 0)
        return false; /* an empty file maps to no pointer at all: no arithmetic on it */
    const uint8_t *end = data + len, *p = skip_lead(data, end);
    return (end - p >= 5 && memcmp(p, "<?xml", 5) == 0) ||
           (end - p >= 6 && memcmp(p, "<plist", 6) == 0);
}

static const uint8_t *find(const uint8_t *p, const uint8_t *end, const char *needle)
{
    size_t n = strlen(needle);
    while (end - p >= (ptrdiff_t)n) {
        const uint8_t *c = memchr(p, needle[0], (size_t)(end - p) - n + 1);
        if (c == NULL)
            return NULL;
        if (memcmp(c, needle, n) == 0)
            return c;
        p = c + 1;
    }
    return NULL;
}

err_code symbolmap_uuidmap_parse(char original[37], const uint8_t *data, size_t len,
                                 err_info *err)
{
    original[0] = '\0';
    if (len > SYMBOLMAP_MAX_UUIDMAP_BYTES)
        return err_set(err, ERR_TOO_LARGE, "UUID map has %zu bytes, over the limit of %u", len,
                       SYMBOLMAP_MAX_UUIDMAP_BYTES);
    if (len >= 8 && memcmp(data, "bplist00", 8) == 0)
        return err_set(err, ERR_UNSUPPORTED, "UUID map is a binary property list: send the XML "
                       "form (plutil -convert xml1)");
    if (!symbolmap_uuidmap_test(data, len))
        return err_set(err, ERR_INVALID, "not a UUID map: not an XML property list");
    const uint8_t *end = data + len;
    if (find(data, end, "<plist") == NULL || find(data, end, "<dict>") == NULL)
        return err_set(err, ERR_INVALID, "not a UUID map: no <plist> with a <dict>");
    const uint8_t *k = find(data, end, "<key>DBGOriginalUUID</key>");
    if (k == NULL)
        return err_set(err, ERR_INVALID, "not a UUID map: the property list has no "
                       "DBGOriginalUUID key");
    const uint8_t *p = skip_lead(k + 26, end);
    if (end - p < 8 || memcmp(p, "<string>", 8) != 0)
        return err_set(err, ERR_INVALID, "UUID map: DBGOriginalUUID is not followed by a "
                       "<string>");
    p += 8;
    const uint8_t *close = find(p, end, "</string>");
    if (close == NULL)
        return err_set(err, ERR_INVALID, "UUID map: DBGOriginalUUID's <string> is not closed");
    const uint8_t *a = p, *b = close;
    while (a < b && (*a == ' ' || *a == '\n' || *a == '\r' || *a == '\t'))
        a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\n' || b[-1] == '\r' || b[-1] == '\t'))
        b--;
    if (!symbolmap_uuid_normalize(original, (const char *)a, (size_t)(b - a)))
        return err_set(err, ERR_INVALID, "UUID map: DBGOriginalUUID \"%.*s\" is not a UUID",
                       (int)(b - a < 40 ? b - a : 40), (const char *)a);
    return ERR_OK;
}
