/*
 * Tests for common/symbolmap: BCSymbolMap parsing (header, versions, a file cut short, CRLF,
 * NUL), the reveal (both hidden forms, paths, references past the map, digits that overflow,
 * near misses left alone) and UUID maps (the real plist's shape, a plist without the key, a
 * binary plist, UUIDs from file names). The real files are checked in real_bitcode.
 */
#include <string.h>

#include "harness.h"
#include "symbolmap/symbolmap.h"

#define MAP "BCSymbolMap Version: 2.0\n-[Foo bar]\n_addJSONData\n/Users/me/src\nFoo.m\n"

static symbolmap *parse(const char *text, err_code want)
{
    symbolmap *m = NULL;
    err_info err = {0};
    err_code rc = symbolmap_parse(&m, (const uint8_t *)text, strlen(text), 0, &err);
    CHECK_EQ_INT(rc, want);
    if (rc != ERR_OK)
        CHECK(err.msg[0] != '\0' && m == NULL);
    return m;
}

static void parses_lines_after_the_header(void)
{
    symbolmap *m = parse(MAP, ERR_OK);
    CHECK_EQ_INT(symbolmap_count(m), 4);
    size_t len;
    CHECK_EQ_STR(symbolmap_line(m, 0, &len), "-[Foo bar]");
    CHECK_EQ_INT(len, 10);
    CHECK_EQ_STR(symbolmap_line(m, 3, NULL), "Foo.m");
    CHECK(symbolmap_line(m, 4, NULL) == NULL);
    symbolmap_free(m);
    m = parse("BCSymbolMap Version: 2.0\r\na\r\n\r\nb\r\n", ERR_OK);
    CHECK_EQ_INT(symbolmap_count(m), 3);
    CHECK_EQ_STR(symbolmap_line(m, 0, NULL), "a");
    CHECK_EQ_STR(symbolmap_line(m, 1, NULL), "");
    symbolmap_free(m);
    m = parse("BCSymbolMap Version: 2.0\n", ERR_OK);
    CHECK_EQ_INT(symbolmap_count(m), 0);
    symbolmap_free(m);
}

static void refuses_what_is_not_a_whole_map(void)
{
    err_info err = {0};
    symbolmap *m = NULL;
    parse("BCSymbolMap Version: 2.0\n-[Foo bar]\n_addJSO", ERR_INVALID);   /* cut short */
    parse("BCSymbolMap Vers", ERR_INVALID);
    parse("BCSymbolMap Version: 2.0", ERR_INVALID);                      /* header only, cut */
    parse("hello\n", ERR_INVALID);
    parse("BCSymbolMap Version: 3.0\na\n", ERR_UNSUPPORTED);
    parse("BCSymbolMap Version: 1.0\na\n", ERR_UNSUPPORTED);
    static const char nul[] = "BCSymbolMap Version: 2.0\na\0b\n";
    CHECK_EQ_INT(symbolmap_parse(&m, (const uint8_t *)nul, sizeof nul - 1, 0, &err), ERR_INVALID);
    CHECK(strstr(err.msg, "NUL") != NULL);
    CHECK_EQ_INT(symbolmap_parse(&m, (const uint8_t *)MAP, strlen(MAP), 10, &err), ERR_TOO_LARGE);
    CHECK(m == NULL);
}

static const char *reveal(buf *out, const symbolmap *m, const char *s, bool want_hidden,
                          symbolmap_reveal_stats *st)
{
    out->len = 0;
    bool hidden = symbolmap_reveal(out, m, s, strlen(s), st);
    CHECK(hidden == want_hidden);
    CHECK(symbolmap_has_hidden(s, strlen(s)) == want_hidden);
    buf_putc(out, '\0');
    return hidden ? (const char *)out->data : s;
}

static void reveals_both_forms_and_paths(void)
{
    symbolmap *m = parse(MAP, ERR_OK);
    buf out;
    buf_init(&out);
    symbolmap_reveal_stats st = {0};
    CHECK_EQ_STR(reveal(&out, m, "__hidden#0_", true, &st), "-[Foo bar]");
    /* a symbol-table name, its Mach-O underscore stripped: the line's underscore goes too */
    CHECK_EQ_STR(reveal(&out, m, "_hidden#1_", true, &st), "addJSONData");
    CHECK_EQ_STR(reveal(&out, m, "__hidden#1_", true, &st), "_addJSONData");
    CHECK_EQ_STR(reveal(&out, m, "__hidden#2_/__hidden#3_", true, &st), "/Users/me/src/Foo.m");
    CHECK_EQ_STR(reveal(&out, m, "x __hidden#0_ y", true, &st), "x -[Foo bar] y");
    CHECK_EQ_INT(st.hidden, 6);
    CHECK_EQ_INT(st.revealed, 6);
    CHECK_EQ_INT(st.max_index, 4);
    /* past the map's end: left as it is, counted */
    memset(&st, 0, sizeof st);
    CHECK_EQ_STR(reveal(&out, m, "__hidden#7_", true, &st), "__hidden#7_");
    CHECK_EQ_INT(st.hidden, 1);
    CHECK_EQ_INT(st.revealed, 0);
    CHECK_EQ_INT(st.max_index, 8);
    CHECK_EQ_STR(reveal(&out, m, "__hidden#99999999999_", false, &st), "__hidden#99999999999_");
    /* near misses: no digits, no closing underscore, the stripped form inside a string */
    CHECK_EQ_STR(reveal(&out, m, "__hidden#_", false, &st), "__hidden#_");
    CHECK_EQ_STR(reveal(&out, m, "__hidden#12", false, &st), "__hidden#12");
    CHECK_EQ_STR(reveal(&out, m, "a_hidden#1_", false, &st), "a_hidden#1_");
    CHECK_EQ_STR(reveal(&out, m, "_hidden#1_x", false, &st), "_hidden#1_x");
    CHECK_EQ_STR(reveal(&out, m, "main", false, &st), "main");
    /* no map: the reference is kept, and counted */
    memset(&st, 0, sizeof st);
    CHECK_EQ_STR(reveal(&out, NULL, "__hidden#2_/__hidden#3_", true, &st),
                 "__hidden#2_/__hidden#3_");
    CHECK_EQ_INT(st.hidden, 2);
    CHECK_EQ_INT(st.revealed, 0);
    buf_reset(&out);
    symbolmap_free(m);
}

static void reads_uuid_maps(void)
{
    static const char plist[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST "
        "1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n"
        "<dict>\n   <key>DBGOriginalUUID</key>\n   <string>c8374b6d-6e96-34d8-ae38-efaa5fec424f"
        "</string>\n</dict>\n</plist>";
    char uuid[37];
    err_info err = {0};
    CHECK(symbolmap_uuidmap_test((const uint8_t *)plist, strlen(plist)));
    /* an empty file is mapped to no pointer: tested without arithmetic on it */
    CHECK(!symbolmap_uuidmap_test(NULL, 0));
    CHECK(!symbolmap_test(NULL, 0));
    CHECK_EQ_INT(symbolmap_uuidmap_parse(uuid, NULL, 0, &err), ERR_INVALID);
    CHECK_EQ_INT(symbolmap_uuidmap_parse(uuid, (const uint8_t *)plist, strlen(plist), &err), ERR_OK);
    CHECK_EQ_STR(uuid, "C8374B6D-6E96-34D8-AE38-EFAA5FEC424F");
    static const char info[] = "<?xml version=\"1.0\"?><plist><dict><key>CFBundleIdentifier"
                               "</key><string>com.apple.xcode.dsym.App</string></dict></plist>";
    CHECK_EQ_INT(symbolmap_uuidmap_parse(uuid, (const uint8_t *)info, strlen(info), &err),
                 ERR_INVALID);
    CHECK(strstr(err.msg, "not a UUID map") != NULL);
    static const char bad[] = "<plist><dict><key>DBGOriginalUUID</key><string>nope</string>"
                              "</dict></plist>";
    CHECK_EQ_INT(symbolmap_uuidmap_parse(uuid, (const uint8_t *)bad, strlen(bad), &err), ERR_INVALID);
    CHECK_EQ_INT(symbolmap_uuidmap_parse(uuid, (const uint8_t *)"bplist00xx", 10, &err),
                 ERR_UNSUPPORTED);
    CHECK_EQ_INT(symbolmap_uuidmap_parse(uuid, (const uint8_t *)"junk", 4, &err), ERR_INVALID);
}

static void uuids_from_file_names(void)
{
    char u[37];
    CHECK(symbolmap_uuid_from_name(u, "a/b/c8374b6d-6e96-34d8-ae38-efaa5fec424f.bcsymbolmap",
                                   ".bcsymbolmap"));
    CHECK_EQ_STR(u, "C8374B6D-6E96-34D8-AE38-EFAA5FEC424F");
    CHECK(symbolmap_uuid_from_name(u, "C8374B6D6E9634D8AE38EFAA5FEC424F.PLIST", ".plist"));
    CHECK_EQ_STR(u, "C8374B6D-6E96-34D8-AE38-EFAA5FEC424F");
    CHECK(!symbolmap_uuid_from_name(u, "Info.plist", ".plist"));
    CHECK(!symbolmap_uuid_from_name(u, "C8374B6D-6E96-34D8-AE38-EFAA5FEC424F.plist",
                                    ".bcsymbolmap"));
    CHECK(!symbolmap_uuid_from_name(u, "C8374B6D-6E96-34D8-AE38-EFAA5FEC424.plist", ".plist"));
}

int main(void)
{
    RUN(parses_lines_after_the_header);
    RUN(refuses_what_is_not_a_whole_map);
    RUN(reveals_both_forms_and_paths);
    RUN(reads_uuid_maps);
    RUN(uuids_from_file_names);
    return harness_done();
}
