/* test_op_coverage.c - every row of the op table (include/gwr/ops.def) has
 * a shape rule (src/functional/infer/), a kernel (src/exec/kernels/) and a
 * cost rule (src/passes/analyze.c), or stands on
 * tests/unit/op_coverage_expected_missing.txt with a reason. A listed gap
 * that has been filled fails the test as stale, so the list stays true.
 *
 * The list's lines: "<op> <facet> <reason...>", facet one of shape,
 * kernel, cost; <op> as gwr_op_lookup takes it, "domain::Name" outside the
 * default domain; '#' starts a comment. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec/exec_internal.h"
#include "functional/functional_internal.h"
#include "passes/analyze_internal.h"

#ifndef GWR_SOURCE_DIR
#error "GWR_SOURCE_DIR must be defined (tests/CMakeLists.txt)"
#endif
#define LIST GWR_SOURCE_DIR "/tests/unit/op_coverage_expected_missing.txt"

enum { F_SHAPE, F_KERNEL, F_COST, NFACETS };
static const char *const facet_names[NFACETS] = {"shape", "kernel", "cost"};

static int has(gwr_op_id id, int facet) {
    switch (facet) {
    case F_SHAPE: return gwr_fn_infer_has_rule(id);
    case F_KERNEL: return gwr_kernel_for_op(id) != NULL;
    default: return an_op_has_cost_rule(id);
    }
}

/* listed[id][facet]: the line number of the entry, 0 when not listed. */
static int listed[GWR_OP_COUNT][NFACETS];

static gwr_op_id lookup_qualified(const char *q) {
    const char *sep = strstr(q, "::");
    if (!sep) return gwr_op_lookup("", q);
    char dom[128];
    size_t n = (size_t)(sep - q);
    if (n >= sizeof dom) return GWR_OP_CUSTOM;
    memcpy(dom, q, n);
    dom[n] = 0;
    return gwr_op_lookup(dom, sep + 2);
}

TEST(test_expected_missing_list_parses) {
    FILE *f = fopen(LIST, "r");
    if (!CHECK(f != NULL)) return;
    char line[512];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char op[128], facet[16];
        int used = 0;
        if (sscanf(line, " %127s %15s %n", op, facet, &used) < 2) {
            char rest[8];
            CHECK_EQ_INT(sscanf(line, " %7s", rest), -1); /* blank or comment only */
            continue;
        }
        gwr_op_id id = lookup_qualified(op);
        int fc = -1;
        for (int k = 0; k < NFACETS; k++)
            if (!strcmp(facet, facet_names[k])) fc = k;
        const char *reason = line + used;
        if (!CHECK(id != GWR_OP_CUSTOM && fc >= 0 && strlen(reason) > 3)) {
            fprintf(stderr, "  %s:%d: want \"<op of the table> shape|kernel|cost <reason>\"\n", LIST, lineno);
            continue;
        }
        if (!CHECK(listed[id][fc] == 0)) fprintf(stderr, "  %s:%d: %s %s listed twice\n", LIST, lineno, op, facet);
        listed[id][fc] = lineno;
    }
    fclose(f);
}

TEST(test_every_op_covered_or_listed) {
    int missing[NFACETS] = {0};
    for (int id = 1; id < GWR_OP_COUNT; id++) {
        const gwr_op_info *info = gwr_op_info_get((gwr_op_id)id);
        if (!CHECK(info != NULL)) continue;
        for (int k = 0; k < NFACETS; k++) {
            int present = has((gwr_op_id)id, k);
            missing[k] += !present;
            const char *sep = *info->domain ? "::" : "";
            if (!present && !listed[id][k]) {
                fprintf(stderr, "%s%s%s has no %s rule and is not on %s\n", info->domain, sep, info->name,
                        facet_names[k], LIST);
                CHECK(!"every op has the rule or is listed");
            } else if (present && listed[id][k]) {
                fprintf(stderr, "%s:%d: stale: %s%s%s now has a %s rule; remove the line\n", LIST, listed[id][k],
                        info->domain, sep, info->name, facet_names[k]);
                CHECK(!"no listed op has the rule");
            } else {
                CHECK(1);
            }
        }
    }
    printf("ops: %d; without a shape rule %d, a kernel %d, a cost rule %d (all listed)\n", GWR_OP_COUNT - 1,
           missing[F_SHAPE], missing[F_KERNEL], missing[F_COST]);
}

/* The three predicates answer for real: ops known to have all three. */
TEST(test_known_ops) {
    static const gwr_op_id ops[] = {GWR_OP_Add, GWR_OP_MatMul, GWR_OP_Conv, GWR_OP_Softmax, GWR_OP_Reshape};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        for (int k = 0; k < NFACETS; k++) CHECK(has(ops[i], k));
    CHECK(!gwr_fn_infer_has_rule(GWR_OP_CUSTOM));
    CHECK(gwr_kernel_for_op(GWR_OP_CUSTOM) == NULL);
    CHECK(!an_op_has_cost_rule(GWR_OP_CUSTOM));
}

int main(void) {
    RUN(test_expected_missing_list_parses);
    RUN(test_every_op_covered_or_listed);
    RUN(test_known_ops);
    return check_report();
}
