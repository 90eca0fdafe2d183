/* cmd_rules.c - `gwr rules check|lint|print FILE`: a .rules file proved
 * on random instances of its patterns (check), searched for loops,
 * rules that undo each other and shadowed rules (lint), or shown as
 * parsed (print). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: gwr rules check FILE [--instances N] [--seed S]\n"
            "       gwr rules lint FILE [--instances N] [--seed S]\n"
            "       gwr rules print FILE\n"
            "\n"
            "Works on a .rules file (docs/rules.md); the file is parsed and checked as\n"
            "gwr_rules_load does, and a refusal is one line, file:line:col: message.\n"
            "\n"
            "  check   for every rule, N random instances of its pattern (shapes, dtypes and\n"
            "          constants drawn to satisfy its constraints); the rule alone is applied\n"
            "          to a copy of each, must fire, and both sides run on the executor on\n"
            "          the same seeded random inputs. One line per rule with the worst\n"
            "          absolute and relative difference; a rule beyond its tolerance (header\n"
            "          `tol T`: |a - b| <= T + T |b|) fails, printing the instance (its layers\n"
            "          and shapes) and the inputs' seed.\n"
            "  lint    before anything runs: a rule that fires on its own output without\n"
            "          stopping (a loop), two rules of one phase that undo each other, a rule\n"
            "          shadowed by one tried before it (higher or equal benefit, earlier in\n"
            "          the file) that takes every instance of it at its root. One line per\n"
            "          finding, naming the rules and their file:line; notes are not findings.\n"
            "  print   the parsed rules, one per line, in the language's own syntax.\n"
            "\n"
            "  --instances N   instances per rule (check: default 5; lint: at most 3)\n"
            "  --seed S        the seed of every draw (default 0): the same seed, the same run\n"
            "\n"
            "Exit status: 0 success (check: every rule passed; lint: no finding), 1 failure\n"
            "(a file error, a failing rule, a lint finding), 2 bad usage.\n");
}

static int run(int argc, char **argv) {
    if (argc < 2) return cli_usage("rules", "expected check, lint or print");
    const char *sub = argv[1], *file = NULL;
    int mode = !strcmp(sub, "check") ? 0 : !strcmp(sub, "lint") ? 1 : !strcmp(sub, "print") ? 2 : -1;
    if (mode < 0) return cli_usage("rules", "unknown subcommand '%s' (check, lint or print)", sub);
    gwr_rules_check_options o = {0};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (mode < 2 && (!strcmp(a, "--instances") || !strcmp(a, "--seed"))) {
            if (i + 1 >= argc) return cli_usage("rules", "%s needs a value", a);
            int64_t v;
            const char *why;
            if (cli_parse_int(argv[++i], &v, &why)) return cli_usage("rules", "%s '%s': %s", a, argv[i], why);
            if (!strcmp(a, "--seed")) o.seed = (uint64_t)v;
            else if (v < 1 || v > 1000) return cli_usage("rules", "--instances '%s': expected 1..1000", argv[i]);
            else o.instances = (int)v;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage("rules", "unknown option '%s'", a);
        } else if (file) {
            return cli_usage("rules", "one FILE only ('%s' and '%s')", file, a);
        } else
            file = a;
    }
    if (!file) return cli_usage("rules", "%s needs a FILE", sub);
    gwr_rules *r = NULL;
    if (cli_load_rules(file, &r)) return CLI_FAIL;
    int rc = CLI_OK;
    if (mode == 2) {
        if (gwr_rules_print(r, stdout)) {
            cli_error(file, gwr_last_errmsg());
            rc = CLI_FAIL;
        }
    } else {
        int n = mode ? gwr_rules_lint(r, &o, stdout) : gwr_rules_check(r, &o, stdout);
        if (n < 0) {
            cli_error(file, gwr_last_errmsg());
            rc = CLI_FAIL;
        } else {
            int nr = gwr_rules_count(r);
            if (mode) printf("%s: %d rule%s, %d finding%s\n", file, nr, nr == 1 ? "" : "s", n, n == 1 ? "" : "s");
            else printf("%s: %d rule%s, %d passed, %d failed\n", file, nr, nr == 1 ? "" : "s", nr - n, n);
            rc = n ? CLI_FAIL : CLI_OK;
        }
    }
    gwr_rules_free(r);
    return rc;
}

const cli_command cli_rules = {"rules", "check, lint or print a .rules file", run, help};
