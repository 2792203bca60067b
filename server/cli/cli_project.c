/*
 * stacksift project create SLUG [--name NAME]
 *   Creates a project with one DSN key and prints its DSN alone on the last line of stdout:
 *   DSN=http://KEY@HOST/ID (HOST from STACKSIFT_PUBLIC_URL, default http:// + STACKSIFT_LISTEN).
 *   Only the key's hash is stored: the DSN is shown once.
 * stacksift project list
 *   One line per project: id, slug, keys accepted now, created, name. Never a key.
 * stacksift project key rotate SLUG [--grace SECONDS]
 *   A new key (its DSN printed as by create); the old one keeps working for SECONDS
 *   (default STACKSIFT_DSN_GRACE_S, 24 h), then never again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "cli/cli.h"
#include "cli/cli_db.h"
#include "config/config.h"
#include "log/log.h"
#include "store/store.h"
#include "store/store_projects.h"

static int project_usage(FILE *f)
{
    fprintf(f, "usage: stacksift project create SLUG [--name NAME]\n"
               "       stacksift project list\n"
               "       stacksift project key rotate SLUG [--grace SECONDS]\n"
               "  SLUG: 1-64 of a-z 0-9 - _. create and rotate print DSN=http://KEY@HOST/ID\n"
               "  (HOST: STACKSIFT_PUBLIC_URL, default STACKSIFT_LISTEN); the old key of a rotation\n"
               "  works SECONDS more (default STACKSIFT_DSN_GRACE_S, 86400)\n");
    return f == stdout ? 0 : 2;
}

/* The DSN of `key` for project `id` into out[cap]: STACKSIFT_PUBLIC_URL, else the listen
 * address (an IPv6 literal in brackets). */
static void dsn_of(char *out, size_t cap, const config *cfg, const char *key, int64_t id)
{
    char listen[300];
    const char *url = cfg->public_url;
    if (!url || !*url) {
        bool v6 = strchr(cfg->listen_host, ':') != NULL;
        snprintf(listen, sizeof listen, "http://%s%s%s:%u", v6 ? "[" : "", cfg->listen_host,
                 v6 ? "]" : "", (unsigned)cfg->listen_port);
        url = listen;
    }
    auth_dsn_format(out, cap, url, key, id);
}

typedef enum { CMD_CREATE, CMD_LIST, CMD_ROTATE } project_cmd;

static int project_run(project_cmd cmd, const char *slug, const char *name, long grace_s)
{
    cli_db db;
    err_info err = {0};
    int status = cli_db_open(&db, &err);
    if (status == 2)
        return 2;
    status = 1;
    const config *cfg = &db.cfg;
    store *s = db.s;
    char key[AUTH_DSN_KEY_MAX], dsn[512], expires[32];
    store_project p;
    if (s == NULL)
        goto fail;
    switch (cmd) {
    case CMD_CREATE:
        if (auth_project_create(&p, key, s, slug, name, &err) != ERR_OK)
            goto fail;
        dsn_of(dsn, sizeof dsn, cfg, key, p.id);
        printf("project '%s' (id %lld) created; its DSN (shown once, store it now):\nDSN=%s\n",
               p.slug, (long long)p.id, dsn);
        break;
    case CMD_ROTATE: {
        unsigned grace = grace_s >= 0 ? (unsigned)grace_s : cfg->dsn_grace_s;
        if (auth_dsn_key_rotate(&p, key, expires, s, slug, grace, &err) != ERR_OK)
            goto fail;
        dsn_of(dsn, sizeof dsn, cfg, key, p.id);
        if (expires[0])
            printf("project '%s' (id %lld): new DSN key; the old one works until %s (%u s)\n",
                   p.slug, (long long)p.id, expires, grace);
        else
            printf("project '%s' (id %lld): new DSN key (there was no current one)\n", p.slug,
                   (long long)p.id);
        printf("DSN=%s\n", dsn);
        break;
    }
    case CMD_LIST: {
        store_project *rows;
        size_t n;
        if (store_projects_list(&rows, &n, s, &err) != ERR_OK)
            goto fail;
        printf("%-6s  %-24s  %-4s  %-24s  %s\n", "ID", "SLUG", "KEYS", "CREATED", "NAME");
        for (size_t i = 0; i < n; i++)
            printf("%-6lld  %-24s  %-4d  %-24s  %s\n", (long long)rows[i].id, rows[i].slug,
                   rows[i].keys, rows[i].created_at, rows[i].name);
        free(rows);
        break;
    }
    }
    status = 0;
    goto done;
fail:
    fprintf(stderr, "stacksift project: %s\n", err.msg);
done:
    cli_db_close(&db);
    return status;
}

int cli_project(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return project_usage(stdout);
    if (argc == 2 && strcmp(argv[1], "list") == 0)
        return project_run(CMD_LIST, NULL, NULL, -1);
    if (argc >= 3 && strcmp(argv[1], "create") == 0) {
        const char *name = NULL;
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
                name = argv[++i];
            else
                return project_usage(stderr);
        }
        return project_run(CMD_CREATE, argv[2], name, -1);
    }
    if (argc >= 4 && strcmp(argv[1], "key") == 0 && strcmp(argv[2], "rotate") == 0) {
        long grace = -1;
        for (int i = 4; i < argc; i++) {
            if (strcmp(argv[i], "--grace") == 0 && i + 1 < argc) {
                char *end;
                errno = 0;
                grace = strtol(argv[++i], &end, 10);
                if (errno || *end || end == argv[i] || grace < 0 || grace > 31536000) {
                    fprintf(stderr, "stacksift project: --grace wants seconds from 0 to "
                                    "31536000, not '%s'\n", argv[i]);
                    return 2;
                }
            } else {
                return project_usage(stderr);
            }
        }
        return project_run(CMD_ROTATE, argv[3], NULL, grace);
    }
    return project_usage(stderr);
}
