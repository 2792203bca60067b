/*
 * test_auth_dsn - how a DSN key is taken from a request as Relay takes it (server/auth):
 * X-Sentry-Auth and "Authorization: Sentry" headers, ?sentry_key=, an envelope header's DSN;
 * and the DSN a project prints. No database: the key's check against the stored keys is in
 * test_projects.
 */
#include <stdint.h>
#include <string.h>

#include "auth/auth.h"
#include "harness.h"

#define KEY "0123456789abcdef0123456789abcdef"

static void sentry_header_as_sentry_cocoa_sends_it(void)
{
    auth_sentry a;
    err_info err = {0};
    CHECK_EQ_INT(auth_sentry_header_parse(&a, "Sentry sentry_version=7,sentry_client=sentry.cocoa/8.36.0,"
                                              "sentry_key=" KEY, &err), ERR_OK);
    CHECK_EQ_STR(a.key, KEY);
    CHECK_EQ_INT(a.version, 7);
    CHECK_EQ_STR(a.client, "sentry.cocoa/8.36.0");
    /* blanks around pairs, scheme in any case, prefix-less names, secret and timestamp */
    CHECK_EQ_INT(auth_sentry_header_parse(&a, "  sentry  key = " KEY " , version=6, "
                                              "sentry_secret=s3cr3t, sentry_timestamp=1700000000.5",
                                          &err), ERR_OK);
    CHECK_EQ_STR(a.key, KEY);
    CHECK_EQ_INT(a.version, 6);
    CHECK_EQ_STR(a.client, "");
    /* a version that is not a number is ignored, not an error */
    CHECK_EQ_INT(auth_sentry_header_parse(&a, "Sentry sentry_key=" KEY ", sentry_version=x", &err),
                 ERR_OK);
    CHECK_EQ_INT(a.version, 0);
}

static void sentry_header_refusals(void)
{
    auth_sentry a;
    err_info err = {0};
    CHECK_EQ_INT(auth_sentry_header_parse(&a, "Bearer ss_abc", &err), ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_sentry_header_parse(&a, "Sentrysentry_key=" KEY, &err), ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_sentry_header_parse(&a, "Sentry sentry_version=7", &err), ERR_UNAUTHORIZED);
    CHECK(strstr(err.msg, "no sentry_key") != NULL);
    CHECK_EQ_INT(auth_sentry_header_parse(&a, "Sentry sentry_key=", &err), ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_sentry_header_parse(&a, "Sentry sentry_key=" KEY "0", &err),
                 ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_sentry_header_parse(&a, "", &err), ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_sentry_header_parse(&a, NULL, &err), ERR_UNAUTHORIZED);
}

static void key_found_in_relays_order(void)
{
    char key[AUTH_DSN_KEY_MAX];
    err_info err = {0};
    const char *other = "Sentry sentry_key=ffffffffffffffffffffffffffffffff";
    /* X-Sentry-Auth first */
    CHECK_EQ_INT(auth_sentry_key_find(key, "Sentry sentry_key=" KEY, other,
                                      "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", &err), ERR_OK);
    CHECK_EQ_STR(key, KEY);
    /* then Authorization of scheme Sentry, before the query */
    CHECK_EQ_INT(auth_sentry_key_find(key, NULL, other, KEY, &err), ERR_OK);
    CHECK_EQ_STR(key, "ffffffffffffffffffffffffffffffff");
    /* a Bearer Authorization is not a DSN key: the query's key is used */
    CHECK_EQ_INT(auth_sentry_key_find(key, NULL, "Bearer ss_0123", KEY, &err), ERR_OK);
    CHECK_EQ_STR(key, KEY);
    CHECK_EQ_INT(auth_sentry_key_find(key, NULL, NULL, KEY, &err), ERR_OK);
    CHECK_EQ_STR(key, KEY);
    /* none: ERR_NOT_FOUND, so that an envelope's dsn header may still be used */
    CHECK_EQ_INT(auth_sentry_key_find(key, NULL, "Bearer ss_0123", NULL, &err), ERR_NOT_FOUND);
    CHECK_EQ_STR(key, "");
    /* present but malformed: refused, not skipped */
    CHECK_EQ_INT(auth_sentry_key_find(key, "Sentry sentry_version=7", NULL, KEY, &err),
                 ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_sentry_key_find(key, NULL, NULL, "", &err), ERR_UNAUTHORIZED);
    CHECK_EQ_INT(auth_sentry_key_find(key, NULL, NULL, KEY KEY, &err), ERR_UNAUTHORIZED);
}

static void dsn_parsed_as_sdks_write_it(void)
{
    char key[AUTH_DSN_KEY_MAX];
    int64_t id;
    err_info err = {0};
#define DSN(s) s, strlen(s)
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("http://" KEY "@127.0.0.1:8080/2"), &err), ERR_OK);
    CHECK_EQ_STR(key, KEY);
    CHECK_EQ_INT(id, 2);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("https://" KEY ":secret@o1.ingest.example.com/"
                                              "sub/path/4505/"), &err), ERR_OK);
    CHECK_EQ_STR(key, KEY);
    CHECK_EQ_INT(id, 4505);
    /* not NUL-terminated: only `len` bytes count */
    const char *buf = "http://" KEY "@h/17 trailing";
    CHECK_EQ_INT(auth_dsn_parse(key, &id, buf, strlen(buf) - 9, &err), ERR_OK);
    CHECK_EQ_INT(id, 17);

    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("http://h/2"), &err), ERR_INVALID);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN(KEY "@h/2"), &err), ERR_INVALID);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("http://" KEY "@h"), &err), ERR_INVALID);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("http://" KEY "@/2"), &err), ERR_INVALID);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("http://" KEY "@h/abc"), &err), ERR_INVALID);
    CHECK(strstr(err.msg, "'abc'") != NULL);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("http://" KEY "@h/0"), &err), ERR_INVALID);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("http://" KEY "@h/99999999999999999999"), &err),
                 ERR_INVALID);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("http://" KEY KEY "@h/2"), &err), ERR_INVALID);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, DSN("http://:x@h/2"), &err), ERR_INVALID);
    CHECK_EQ_INT(auth_dsn_parse(key, &id, "", 0, &err), ERR_INVALID);
    CHECK_EQ_STR(key, "");
    CHECK_EQ_INT(id, 0);
#undef DSN
}

static void dsn_formatted_from_public_url(void)
{
    char out[256];
    auth_dsn_format(out, sizeof out, "http://crash.example.com:8080/", KEY, 3);
    CHECK_EQ_STR(out, "http://" KEY "@crash.example.com:8080/3");
    auth_dsn_format(out, sizeof out, "https://example.com/stacksift", KEY, 12);
    CHECK_EQ_STR(out, "https://" KEY "@example.com/stacksift/12");
    auth_dsn_format(out, sizeof out, "127.0.0.1:8080", KEY, 2);
    CHECK_EQ_STR(out, "http://" KEY "@127.0.0.1:8080/2");
    /* and it reads back */
    char key[AUTH_DSN_KEY_MAX];
    int64_t id;
    err_info err = {0};
    CHECK_EQ_INT(auth_dsn_parse(key, &id, out, strlen(out), &err), ERR_OK);
    CHECK_EQ_STR(key, KEY);
    CHECK_EQ_INT(id, 2);
}

static void slug_rule(void)
{
    CHECK(store_project_slug_valid("ios-app"));
    CHECK(store_project_slug_valid("a"));
    CHECK(store_project_slug_valid("0_x-9"));
    CHECK(!store_project_slug_valid(""));
    CHECK(!store_project_slug_valid(NULL));
    CHECK(!store_project_slug_valid("-x"));
    CHECK(!store_project_slug_valid("Upper"));
    CHECK(!store_project_slug_valid("sp ace"));
    CHECK(!store_project_slug_valid("a/b"));
    char long_slug[70];
    memset(long_slug, 'a', 65);
    long_slug[65] = '\0';
    CHECK(!store_project_slug_valid(long_slug));
    long_slug[64] = '\0';
    CHECK(store_project_slug_valid(long_slug));
}

int main(void)
{
    RUN(sentry_header_as_sentry_cocoa_sends_it);
    RUN(sentry_header_refusals);
    RUN(key_found_in_relays_order);
    RUN(dsn_parsed_as_sdks_write_it);
    RUN(dsn_formatted_from_public_url);
    RUN(slug_rule);
    return harness_done();
}
