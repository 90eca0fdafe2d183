/* fproto_apply - runs a rule set on a model, for tests/fproto/fproto_e2e.py.
 *   fproto_apply RULES MODEL OUT   loads RULES (a .rules file or ONNX
 *                                  function text, told apart by
 *                                  gwr_rules_load), rewrites MODEL with
 *                                  them alone, prunes, verifies, saves OUT
 *   fproto_apply --check RULES     only loads RULES: prints the error
 *                                  (exit 1) or the rule names
 * Exit 1 with gwr's message on stdout when anything fails. */
#include <stdio.h>
#include <string.h>

#include "gwr/gwr.h"

int main(int argc, char **argv) {
    int check = argc == 3 && !strcmp(argv[1], "--check");
    if (!check && argc != 4) {
        fprintf(stderr, "usage: fproto_apply RULES MODEL OUT | fproto_apply --check RULES\n");
        return 2;
    }
    if (check) {
        gwr_rules *r;
        if (gwr_rules_parse_file(argv[2], &r)) {
            printf("%s\n", gwr_last_errmsg());
            return 1;
        }
        for (int i = 0; i < gwr_rules_count(r); i++) printf("%s\n", gwr_rules_name(r, i));
        gwr_rules_free(r);
        return 0;
    }
    int rc = 1;
    gwr_network *net = gwr_onnx_load(argv[2], NULL);
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    if (!net || !m) {
        printf("%s\n", gwr_last_errmsg());
    } else if (gwr_rules_load(m, argv[1]) || gwr_rewrite_manager_rewrite(m, net, NULL)) {
        printf("%s\n", gwr_rewrite_manager_errmsg(m));
    } else if (gwr_network_prune(net, NULL) || gwr_network_verify(net) ||
               gwr_onnx_save(net, argv[3], NULL)) {
        printf("%s\n", gwr_network_errmsg(net));
    } else {
        rc = 0;
    }
    gwr_rewrite_manager_free(m);
    gwr_network_free(net);
    return rc;
}
