/* test_rules_errors.c - every load-time refusal of the .rules language
 * with its exact message and caret ("file:line:col: message", the source
 * line, a caret under the column), and loading from a string, a file and
 * through gwr_rules_load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gwr/gwr.h"

/* Parses text as "t.rules" and checks the whole message. */
static void refused(const char *text, const char *want) {
    gwr_rules *r = (gwr_rules *)1;
    CHECK_EQ_INT(gwr_rules_parse(text, "t.rules", &r), GWR_ERR_PARSE);
    CHECK(r == NULL);
    CHECK_STR(gwr_last_errmsg(), want);
}

TEST(syntax) {
    refused("rule a Relu(x) => x",
            "t.rules:1:8: expected benefit, phase, target, opset, tol or ':', found 'Relu'\n"
            "rule a Relu(x) => x\n"
            "       ^");
    refused("rule a:\n  Relu(x) =>",
            "t.rules:2:13: expected an expression, found the end of the file\n"
            "  Relu(x) =>\n"
            "            ^");
    refused("rule a:\n  Relu(x) => x \"abc",
            "t.rules:2:16: unterminated string\n"
            "  Relu(x) => x \"abc\n"
            "               ^");
    refused("# c\nrule a:\n\tRelu(x) => x $",
            "t.rules:3:15: unexpected character '$'\n"
            "\tRelu(x) => x $\n"
            "\t             ^");
    refused("Relu(x) => x", "t.rules:1:1: expected 'rule', found 'Relu'\nRelu(x) => x\n^");
    refused("rule a:\n  Relu(x) Sigmoid(x)",
            "t.rules:2:11: expected '=>' and the replacement, found 'Sigmoid'\n"
            "  Relu(x) Sigmoid(x)\n"
            "          ^");
    refused("rule a benefit 2 benefit 3: Relu(x) => x",
            "t.rules:1:18: 'benefit' given twice\nrule a benefit 2 benefit 3: Relu(x) => x\n                 ^");
}

TEST(unknown_op_and_arity) {
    refused("rule a:\n  Relu(x) => Foo(x)",
            "t.rules:2:14: unknown op 'Foo'\n  Relu(x) => Foo(x)\n             ^");
    refused("rule a:\n  Reluu(x) => x", "t.rules:2:3: unknown op 'Reluu'\n  Reluu(x) => x\n  ^");
    refused("rule a:\n  Relu(x, y) => x", "t.rules:2:3: Relu takes 1 input, not 2\n  Relu(x, y) => x\n  ^");
    refused("rule a:\n  Relu(x) => Clip(x, x, x, x)",
            "t.rules:2:14: Clip takes 1 to 3 inputs, not 4\n  Relu(x) => Clip(x, x, x, x)\n             ^");
    refused("rule a:\n  Relu(x) => Concat()",
            "t.rules:2:14: Concat takes at least 1 input, not 0\n  Relu(x) => Concat()\n             ^");
    /* Other domains are known through the op table too. */
    refused("rule a:\n  com.microsoft::NoSuchOp(x) => x",
            "t.rules:2:3: unknown op 'com.microsoft::NoSuchOp'\n  com.microsoft::NoSuchOp(x) => x\n  ^");
}

TEST(unbound_names) {
    refused("rule a:\n  Relu(x) => Sigmoid(y)",
            "t.rules:2:22: unbound name 'y' in the replacement\n  Relu(x) => Sigmoid(y)\n                     ^");
    refused("rule a: Relu(x) => x where rank(z) == 2",
            "t.rules:1:33: unbound name 'z' in the where clause\nrule a: Relu(x) => x where rank(z) == 2\n"
            "                                ^");
    refused("rule a:\n  Transpose(x) => Transpose<perm=p>(x)",
            "t.rules:2:34: unbound name 'p' in the replacement\n  Transpose(x) => Transpose<perm=p>(x)\n"
            "                                 ^");
    refused("rule a:\n  Conv(x, w) => Conv<...n>(x, w)",
            "t.rules:2:17: '<...n>' needs a node named 'n' in the pattern (n@Op)\n  Conv(x, w) => Conv<...n>(x, w)\n"
            "                ^");
}

TEST(duplicate_rule) {
    refused("rule a:\n  Relu(x) => x\nrule a:\n  Sigmoid(x) => x",
            "t.rules:3:6: duplicate rule name 'a' (first at line 1)\nrule a:\n     ^");
}

TEST(dtype_cannot_match) {
    refused("rule a:\n  Relu(x: f32) => Cast<to=7>(x)",
            "t.rules:2:19: the replacement's dtype (int64) cannot match the pattern's (float32)\n"
            "  Relu(x: f32) => Cast<to=7>(x)\n"
            "                  ^");
    refused("rule a:\n  Shape(x) => Relu(Neg(y: f32))",
            "t.rules:2:25: expected ',' or ')', found ':'\n  Shape(x) => Relu(Neg(y: f32))\n"
            "                        ^");
    refused("rule a:\n  Equal(x: f32, y) => x",
            "t.rules:2:23: the replacement's dtype (float32) cannot match the pattern's (bool)\n"
            "  Equal(x: f32, y) => x\n"
            "                      ^");
    /* x may be any dtype: Shape(x) => Relu(x) cannot be refused statically. */
    gwr_rules *r;
    CHECK_OK(gwr_rules_parse("rule a: Shape(x) => Relu(x)", NULL, &r));
    gwr_rules_free(r);
}

TEST(string_and_file) {
    const char *text = "rule drop_identity:\n  Identity(x) => x\n";
    gwr_rules *r;
    CHECK_OK(gwr_rules_parse(text, NULL, &r));
    CHECK_EQ_INT(gwr_rules_count(r), 1);
    gwr_rules_free(r);
    CHECK_EQ_INT(gwr_rules_parse("rule a: Relu(x) => Foo(x)", NULL, &r), GWR_ERR_PARSE);
    CHECK_STR(gwr_last_errmsg(), "<string>:1:20: unknown op 'Foo'\nrule a: Relu(x) => Foo(x)\n                   ^");
    char path[] = "/tmp/gwr_rules_XXXXXX";
    int fd = mkstemp(path);
    if (!CHECK(fd >= 0)) return;
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fputs("rule bad:\n  Relu(x) => y\n", f);
    fclose(f);
    CHECK_EQ_INT(gwr_rules_parse_file(path, &r), GWR_ERR_PARSE);
    char want[256];
    snprintf(want, sizeof want, "%s:4:14: unbound name 'y' in the replacement\n  Relu(x) => y\n             ^", path);
    CHECK_STR(gwr_last_errmsg(), want);
    /* gwr_rules_load: a path (no newline, no "=>") or text. */
    gwr_rewrite_manager *m = gwr_rewrite_manager_new();
    CHECK_EQ_INT(gwr_rules_load(m, path), GWR_ERR_PARSE);
    CHECK_STR(gwr_rewrite_manager_errmsg(m), want);
    CHECK_EQ_INT(gwr_rewrite_manager_count(m), 0);
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    CHECK_OK(gwr_rules_load(m, path));
    CHECK_OK(gwr_rules_load(m, "rule drop_dropout: Dropout(x) => x"));
    CHECK_EQ_INT(gwr_rewrite_manager_count(m), 2);
    CHECK_EQ_INT(gwr_rules_load(m, "rule drop_dropout: Dropout(x) => x"), GWR_ERR_DUPLICATE);
    CHECK_EQ_INT(gwr_rules_load(m, "/no/such/file.rules"), GWR_ERR_IO);
    CHECK_STR(gwr_rewrite_manager_errmsg(m), "/no/such/file.rules: cannot open the rules file");
    gwr_rewrite_manager_free(m); /* frees the rule sets it kept (ASan: no leak) */
    unlink(path);
}

int main(void) {
    RUN(syntax);
    RUN(unknown_op_and_arity);
    RUN(unbound_names);
    RUN(duplicate_rule);
    RUN(dtype_cannot_match);
    RUN(string_and_file);
    return check_report();
}
