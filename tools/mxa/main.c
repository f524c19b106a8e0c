/*
 * mxa: the command-line tool. Dispatches to one subcommand per file through
 * the table of commands.h.
 *
 * Exit status (every subcommand): 0 success, 1 the work failed, 2 a usage
 * mistake. Errors are one line on stderr, "mxa: <where>: <what>".
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

typedef struct command {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
} command;

#define MXA_COMMAND_ENTRY(name, help) {#name, help, cmd_##name},
static const command commands[] = {MXA_COMMANDS(MXA_COMMAND_ENTRY)};
#undef MXA_COMMAND_ENTRY

static void print_help(void)
{
    printf("mxa %s: MXFP4 attention (Hadamard rotation, UOS scaling, PNQ) on every device of this machine.\n\n"
           "usage: mxa <command> [options]     mxa <command> --help\n\ncommands:\n",
           mxa_version_string());
    for (int i = 0; i < CLI_COUNT(commands); i++) printf("  %-11s %s\n", commands[i].name, commands[i].help);
    printf("\n  --help      show this help\n  --version   print the version\n\n"
           "New here? Run 'mxa demo'. Environment: MXA_DEVICE, MXA_DISABLE=vulkan,opencl,hip, MXA_LOG=info.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_error("no command given (try 'mxa demo', or 'mxa --help' for the list)");
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        print_help();
        return CLI_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("mxa %s\n", mxa_version_string());
        return CLI_OK;
    }
    for (int i = 0; i < CLI_COUNT(commands); i++)
        if (strcmp(name, commands[i].name) == 0) {
            int rc = commands[i].run(argc - 1, argv + 1);
            /* A failed write to stdout (a full disk, a closed pipe) is a failure too. */
            if (fflush(stdout) != 0 && rc == CLI_OK) {
                cli_error("%s: cannot write to standard output", name);
                rc = CLI_FAIL;
            }
            return rc;
        }
    cli_error("unknown command '%s' (try 'mxa --help')", name);
    return CLI_USAGE;
}
