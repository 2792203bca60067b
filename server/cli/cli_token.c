/*
 * stacksift token create --name NAME --scopes ingest,upload,read[,admin]
 *   Prints the new token once, alone on the last line of stdout; only its hash is stored.
 * stacksift token list
 *   One line per token: id, scopes, created, revoked (or -), name. Never the secret.
 * stacksift token revoke ID
 *   ID is the 12 hex digits `list` shows (or the whole token). Every server stops accepting
 *   it within AUTH_TOKENS_REFRESH_MS (its token table reloads that often).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_db.h"
#include "auth/auth.h"
#include "log/log.h"
#include "store/store.h"
#include "store/store_tokens.h"

static int token_usage(FILE *f)
{
    fprintf(f, "usage: stacksift token create --name NAME --scopes ingest,upload,read[,admin]\n"
               "       stacksift token list\n"
               "       stacksift token revoke ID     (ID as `list` shows it, or the token)\n"
               "  ingest: POST reports  upload: POST dSYMs  read: GET the API  admin: all\n");
    return f == stdout ? 0 : 2;
}

/* `token list` and `token revoke ID`: one store call each. */
static int token_admin(const char *verb, const char *id)
{
    cli_db db;
    err_info err = {0};
    int status = cli_db_open(&db, &err);
    if (status == 2)
        return 2;
    status = 1;
    if (db.s == NULL)
        goto fail;
    if (strcmp(verb, "revoke") == 0) {
        if (auth_token_revoke(db.s, id, &err) != ERR_OK)
            goto fail;
        printf("revoked %s (every server refuses it within %d ms)\n", id, AUTH_TOKENS_REFRESH_MS);
        status = 0;
        goto done;
    }
    store_token_row *rows;
    size_t n;
    if (store_tokens_list(&rows, &n, db.s, false, &err) != ERR_OK)
        goto fail;
    printf("%-12s  %-24s  %-24s  %-24s  %s\n", "ID", "SCOPES", "CREATED", "REVOKED", "NAME");
    for (size_t i = 0; i < n; i++)
        printf("%-12s  %-24s  %-24s  %-24s  %s\n", rows[i].public_id, rows[i].token.scopes,
               rows[i].created_at, rows[i].revoked_at[0] ? rows[i].revoked_at : "-",
               rows[i].token.name);
    free(rows);
    status = 0;
    goto done;
fail:
    fprintf(stderr, "stacksift token %s: %s\n", verb, err.msg);
done:
    cli_db_close(&db);
    return status;
}

int cli_token(int argc, char **argv)
{
    const char *name = NULL, *scopes = NULL;
    if (argc == 2 && strcmp(argv[1], "list") == 0)
        return token_admin("list", NULL);
    if (argc == 3 && strcmp(argv[1], "revoke") == 0)
        return token_admin("revoke", argv[2]);
    if (argc < 2 || strcmp(argv[1], "create") != 0)
        return token_usage(argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
                                         strcmp(argv[1], "-h") == 0) ? stdout : stderr);
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
            name = argv[++i];
        else if (strcmp(argv[i], "--scopes") == 0 && i + 1 < argc)
            scopes = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return token_usage(stdout);
        else
            return token_usage(stderr);
    }
    if (!name || !scopes)
        return token_usage(stderr);
    unsigned bits;
    err_info err = {0};
    if (auth_scopes_parse(&bits, scopes, &err) != ERR_OK) {
        fprintf(stderr, "stacksift token: %s\n", err.msg);
        return 2;
    }
    cli_db db;
    char token[AUTH_TOKEN_MAX];
    int status = cli_db_open(&db, &err);
    if (status == 2)
        return 2;
    if (status != 0 || auth_token_create(token, db.s, name, scopes, &err) != ERR_OK) {
        status = 1;
        fprintf(stderr, "stacksift token: %s\n", err.msg);
        goto done;
    }
    printf("token for '%s' with scopes %s (shown once, store it now):\n%s\n", name, scopes, token);
    status = 0;
done:
    cli_db_close(&db);
    return status;
}
