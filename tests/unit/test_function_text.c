/* The FunctionProto-text front end of the rules room (src/rules/
 * function_text.c, function_rules.c): what it refuses and where it says
 * the problem is.
 * The emitted .rules text of well-formed pairs, written by onnx's own
 * printer, is checked by tests/fproto/fproto_cases.py. */
#include "check.h"
#include "gwr/rules.h"
#include "rules/function_text.h"

/* Loads text with gwr_rules_parse_functions; expects the refusal with
 * message `first` (the "file:line:col: message" line), the source line and
 * the caret under column `col`. */
static void expect_error(const char *text, const char *first, int col) {
    gwr_rules *r = (gwr_rules *)1;
    gwr_status s = gwr_rules_parse_functions(text, "in.txt", &r);
    CHECK_EQ_INT(s, GWR_ERR_PARSE);
    CHECK(r == NULL);
    const char *err = gwr_last_errmsg();
    const char *nl = strchr(err, '\n');
    if (!CHECK(nl != NULL)) return;
    char line1[GWR_ERRMSG_MAX];
    snprintf(line1, sizeof line1, "%.*s", (int)(nl - err), err);
    CHECK_STR(line1, first);
    const char *caret = strrchr(err, '\n');
    CHECK_EQ_INT((long long)strlen(caret + 1), col);
    CHECK_EQ_INT(caret[col], '^');
}

static const char *convert(const char *text, gwr_ft_rules *r) {
    size_t off;
    char msg[GWR_FT_MSG_MAX];
    gwr_status s = gwr_ft_to_rules(text, r, &off, msg);
    if (!CHECK_EQ_INT(s, GWR_OK)) {
        fprintf(stderr, "at %zu: %s\n", off, msg);
        return "";
    }
    return r->text;
}

TEST(syntax_errors) {
    expect_error("p (x) => (y) {\n  y = Relu(x\n}\n", "in.txt:3:1: expected ')' after the node's inputs, found '}'", 1);
    expect_error("p (x) -> (y) { y = Relu(x) }",
                 "in.txt:1:7: expected '=>' between the inputs and the outputs, found '-'", 7);
    expect_error("<domain: \"d\", opset: [\"\" : 18]>\np (x) => (y) { y = Relu(x) }",
                 "in.txt:1:15: unknown function header key 'opset'", 15);
    expect_error("p (x) => (y) {\n  y = LeakyRelu <alpha = > (x)\n}",
                 "in.txt:2:26: expected a value, found '>'", 26);
    expect_error("p (x) => (y) {\n  y = Relu(x)\n", "in.txt:3:1: expected '}' to close the body, found end of input", 1);
    expect_error("  # only a comment\n", "in.txt:2:1: no function: expected a pattern and its replacement", 1);
    expect_error("p (x) => (y) { y = Relu(x) }\n  q (x) => (y) { y = Relu(x) }\nr (x) => (y) { y = Relu(x) }",
                 "in.txt:3:1: the pattern 'r' has no replacement: functions come in pairs (pattern, "
                 "then replacement)", 1);
    expect_error("p (x) => (y) { y = Cast <to = \"a\", to2: int = 1.5> (x) }",
                 "in.txt:1:47: the value does not have the declared type", 47);
}

TEST(meaning_errors) {
    /* the replacement reads an input the pattern does not have */
    expect_error("p (x, w) => (y) { y = MatMul(x, w) }\n"
                 "r (x, v) => (y) { y = Gemm(x, v) }",
                 "in.txt:2:7: replacement input 'v' is not an input of the pattern 'p'", 7);
    /* an attribute ref the pattern does not bind */
    expect_error("p (x) => (y) { y = Relu(x) }\n"
                 "r (x) => (y) { y = LeakyRelu <alpha = @a> (x) }",
                 "in.txt:2:39: attribute reference '@a' is not bound by the pattern 'p'", 39);
    /* a name nothing defines */
    expect_error("p (x) => (y) {\n  y = Add(x, t)\n}\nr (x) => (y) { y = Relu(x) }",
                 "in.txt:2:14: 't' is neither an input of 'p' nor an output of one of its nodes", 14);
    /* outputs from two nodes */
    expect_error("p (x) => (a, b) {\n  a = Relu(x)\n  b = Sigmoid(x)\n}\nr (x) => (a, b) { a, b = Split(x) }",
                 "in.txt:1:14: the outputs of 'p' must be the outputs of one node, in order (a rule has one root)", 14);
    /* a node that leads nowhere */
    expect_error("p (x) => (y) {\n  z = Neg(x)\n  y = Relu(x)\n}\nr (x) => (y) { y = Relu(x) }",
                 "in.txt:2:7: this node of 'p' does not lead to its outputs", 7);
    /* a non-uniform constant in a pattern */
    expect_error("p (x) => (y) {\n  c = Constant <value = float[2] {1, 2}> ()\n  y = Add(x, c)\n}\n"
                 "r (x) => (y) { y = Relu(x) }",
                 "in.txt:2:25: a pattern constant must hold one value (every element equal): .rules "
                 "matches constants by value", 25);
    /* output counts differ */
    expect_error("p (x) => (y) { y = Relu(x) }\nr (x) => (a, b) { a, b = Split(x) }",
                 "in.txt:2:1: the replacement 'r' has 2 outputs, the pattern 'p' has 1", 1);
    /* .rules strings have no escapes */
    expect_error("p (x) => (y) { y = Cast <s = \"a\\\"b\"> (x) }\nr (x) => (y) { y = Relu(x) }",
                 "in.txt:1:30: a string holding a quote or a line break cannot be written in a rule", 30);
    /* a node read twice that reads itself is still a cycle */
    expect_error("p (x) => (y) {\n  d = Add(x, d)\n  y = Mul(d, d)\n}\nr (x) => (y) { y = Relu(x) }",
                 "in.txt:2:14: 'd' depends on itself (a cycle)", 14);
    /* a pattern that matches nothing */
    expect_error("p (x) => (x) { }\nr (x) => (x) { }", "in.txt:1:1: the pattern 'p' has no nodes", 1);
}

TEST(emits) {
    gwr_ft_rules r;
    /* onnxsim's README example: the names and structure carry over */
    const char *readme = "<domain: \"com.example\", opset_import: [\"\" : 18]>\n"
                         "matmul_add_pattern (x, w, b) => (y)\n{\n    t = MatMul(x, w)\n"
                         "    y = Add(t, b)\n}\n"
                         "<domain: \"com.example\", opset_import: [\"\" : 18]>\n"
                         "gemm_replacement (x, w, b) => (y)\n{\n    y = Gemm(x, w, b)\n}\n";
    CHECK_STR(convert(readme, &r), "# rules from ONNX function text\n"
                                   "rule matmul_add:\n  Add(MatMul(x, w), b)  =>  Gemm(x, w, b)\n");
    CHECK_EQ_INT(r.nrules, 1);
    /* the .rules text of the root op and of a replacement input map back
     * to their places in the input */
    if (r.text) {
        CHECK_EQ_INT((long long)gwr_ft_input_offset(&r, (size_t)(strstr(r.text, "Add(") - r.text)),
                     (long long)(strstr(readme, "Add(") - readme));
        CHECK_EQ_INT((long long)gwr_ft_input_offset(&r, (size_t)(strstr(r.text, "Gemm(") - r.text) + 8),
                     (long long)(strstr(readme, "Gemm(") - readme) + 8);
    }
    gwr_ft_rules_free(&r);
    /* capital names become v_ names; attribute refs become captures */
    CHECK_STR(convert("tt (X) => (Y) {\n  T = Cast <to = @t> (X)\n  Y = Cast <to = @t> (T)\n}\n"
                      "tt_r (X) => (Y) {\n  Y = Cast <to = @t> (X)\n}\n",
                      &r),
              "# rules from ONNX function text\n"
              "rule tt:\n  Cast<to=t>(Cast<to=t>(v_X))  =>  Cast<to=t>(v_X)\n");
    gwr_ft_rules_free(&r);
    /* a value read twice in a pattern (a DAG): its node is named at the
     * first read and named again at the second; a Split's two outputs read
     * by one Add are outputs 0 and 1 of one named node */
    CHECK_STR(convert("p (x, m) => (y) {\n  d = Sub(x, m)\n  y = Mul(d, d)\n}\n"
                      "r (x, m) => (y) { y = Sub(x, m) }\n", &r),
              "# rules from ONNX function text\nrule p:\n  Mul(d@Sub(x, m), d)  =>  Sub(x, m)\n");
    gwr_ft_rules_free(&r);
    CHECK_STR(convert("p (x) => (y) {\n  a, b = Split(x)\n  y = Add(a, b)\n}\nr (x) => (y) { y = Relu(x) }\n", &r),
              "# rules from ONNX function text\nrule p:\n  Add(a@Split(x)[0], a[1])  =>  Relu(x)\n");
    gwr_ft_rules_free(&r);
    /* an elimination: the replacement returns its input */
    CHECK_STR(convert("id (x) => (y) { y = Identity(x) }\nid_r (x) => (x) { }\n", &r),
              "# rules from ONNX function text\nrule id:\n  Identity(x)  =>  x\n");
    gwr_ft_rules_free(&r);
}

TEST(detects_form) {
    CHECK(gwr_ft_looks_like_functions("<domain: \"x\">\np (x) => (y) {}"));
    CHECK(gwr_ft_looks_like_functions("# c\n  p <a> (x) => (y) {}"));
    CHECK(gwr_ft_looks_like_functions("p (x,\n  w) => (y) {}"));
    CHECK(gwr_ft_looks_like_functions("p (x) =>\n (y)\n{ }"));
    CHECK(!gwr_ft_looks_like_functions("rule a:\n  Relu(x) => x\n"));
    CHECK(!gwr_ft_looks_like_functions("# c\nrule a:\n  Relu(x) => x\n"));
    CHECK(!gwr_ft_looks_like_functions("rules/a.rules"));
    CHECK(!gwr_ft_looks_like_functions(""));
    CHECK(gwr_ft_looks_like_functions("p <a: float = 1.0> (float[N] x) => (y) <float[N] t> {"));
    CHECK(gwr_ft_looks_like_functions("\"a b\" (x) => (y) {"));
    /* .rules text that lacks its `rule` line is .rules (and refused as such) */
    CHECK(!gwr_ft_looks_like_functions("Relu(x) => x"));
    CHECK(!gwr_ft_looks_like_functions("Relu(x) => (x)"));
    CHECK(!gwr_ft_looks_like_functions("Relu(x)\n  => Sigmoid(x)"));
}

int main(void) {
    RUN(syntax_errors);
    RUN(meaning_errors);
    RUN(emits);
    RUN(detects_form);
    return check_report();
}
