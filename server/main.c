/*
 * stacksift - turns raw iOS/macOS crash and stack reports into symbolicated, grouped issues.
 * main.c only dispatches to the subcommands in cli/.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} subcommand;

static const subcommand SUBCOMMANDS[] = {
    {"symcache", cli_symcache, "symcache build INPUT -o OUTDIR [--symbol-maps DIR]   build .symc files from a dSYM, zip or Mach-O\n"
                               "  symcache unwind FILE.symc   the unwind info a symcache carries (JSON)\n"
                               "  symcache rebuild [--uuid UUID]   re-derive stored symcaches from the stored uploads"},
    {"lookup", cli_lookup, "lookup -o INPUT [--arch A] [--symbol-maps DIR] [-l LOAD] [-i] [--json] [--mangled] ADDR...   atos-compatible lookup"},
    {"parse", cli_parse, "parse [--json] FILE|-   parse a crash/stack report (any format) and print the model"},
    {"symbolicate", cli_symbolicate, "symbolicate --dsym PATH [--dsym PATH...] [--symcache-dir DIR] [--symbol-maps DIR] [--json] [--mangled] FILE|-   symbolicate a report"},
    {"signature", cli_signature, "signature [--dsym PATH...] [--symcache-dir DIR] [--symbol-maps DIR] [--frames N] FILE...   what each report groups as (JSON lines)"},
    {"minidump", cli_minidump, "minidump walk [--json] [--symcache-dir DIR]... DUMP [DEBUG_FILE...]   walk a minidump's threads (unwind info of the executables or symcaches given) and symbolicate them"},
    {"demangle", cli_demangle, "demangle [--simplified] [--no-swift|--no-cxx] [NAME...]   Swift/C++ names (or filter stdin)"},
    {"serve", cli_serve, "serve   run the HTTP service (configured by STACKSIFT_* env vars, see serve --help)"},
    {"migrate", cli_migrate, "migrate   apply database migrations (STACKSIFT_DATABASE_URL)"},
    {"regroup", cli_regroup, "regroup [--page N] [--if-needed]   re-sign stored reports by this binary's grouping rules, merging and splitting issues"},
    {"retention", cli_retention, "retention run [--force]   expire old reports, aggregates and dSYMs now (STACKSIFT_* env)"},
    {"token", cli_token, "token create --name NAME --scopes SCOPES | list | revoke ID   API tokens"},
    {"alert", cli_alert, "alert add --kind KIND --url URL [...] | list | remove ID   alert rules and their webhooks"},
    {"project", cli_project, "project create SLUG [--name NAME] | list | key rotate SLUG [--grace SECONDS]   projects and their DSNs"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: stacksift COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof SUBCOMMANDS[0]; i++)
        fprintf(f, "  %s\n", SUBCOMMANDS[i].usage);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof SUBCOMMANDS[0]; i++)
        if (strcmp(argv[1], SUBCOMMANDS[i].name) == 0)
            return SUBCOMMANDS[i].run(argc - 1, argv + 1);
    fprintf(stderr, "stacksift: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
