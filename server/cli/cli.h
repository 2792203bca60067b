/*
 * cli - the stacksift subcommands. Each takes the arguments after its name (argv[0] is the
 * subcommand name) and returns the process exit status: 0 ok, 1 input error, 2 usage error.
 */
#ifndef STACKSIFT_CLI_CLI_H
#define STACKSIFT_CLI_CLI_H



int cli_symcache(int argc, char **argv);   /* stacksift symcache build INPUT -o OUTDIR */
int cli_lookup(int argc, char **argv);     /* stacksift lookup -o INPUT [...] ADDRESS... */
int cli_parse(int argc, char **argv);      /* stacksift parse [--json] FILE|- */
int cli_symbolicate(int argc, char **argv); /* stacksift symbolicate --dsym PATH [...] FILE|- */
int cli_signature(int argc, char **argv);  /* stacksift signature [--dsym PATH] FILE... */
int cli_demangle(int argc, char **argv);   /* stacksift demangle [--simplified] [NAME...] */
int cli_minidump(int argc, char **argv);   /* stacksift minidump walk [--json]
                                              [--symcache-dir DIR]... DUMP [FILE...] */

int cli_serve(int argc, char **argv);     /* stacksift serve   (config from STACKSIFT_* env) */
int cli_migrate(int argc, char **argv);   /* stacksift migrate (STACKSIFT_DATABASE_URL) */
int cli_token(int argc, char **argv);     /* stacksift token create --name N --scopes S */
int cli_project(int argc, char **argv);   /* stacksift project create SLUG [--name N] | list |
                                             key rotate SLUG [--grace S] */
int cli_retention(int argc, char **argv); /* stacksift retention run [--force] */
int cli_alert(int argc, char **argv);     /* stacksift alert add|list|remove */
int cli_regroup(int argc, char **argv);   /* stacksift regroup [--page N] [--if-needed] */

#endif
