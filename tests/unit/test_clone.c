/* test_clone.c - gwr_network_clone, judged by gwr_network_equal (an oracle
 * written apart from it) and by what equality does not look at: network
 * order of every layer, attribute order, the name counter, that the copy
 * reads only its own tensors, and that neither network sees a change to,
 * or the freeing of, the other.
 *
 * Cases: a hand-made network holding every kind of thing the IR keeps
 * (each attribute type, properties, doc strings, default values, value
 * types of other kinds, symbols, an If with a nested subgraph reading
 * tensors two levels up, a forward read, removed layers); decoders of the
 * functional API (plain ONNX and the attention plugin); every model of the
 * ONNX backend test data that loads; bad arguments; and every allocation
 * of a clone failing in turn (LeakSanitizer checks the failed runs). */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "gwr/gwr.h"
#include "util/util.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* ---- helpers ------------------------------------------------------------ */

/* 1 when gwr_network_equal(a, b) holds; otherwise prints why (with label). */
static int equal(gwr_network *a, gwr_network *b, const char *label) {
    char why[512];
    int eq = gwr_network_equal(a, b, why, sizeof why);
    if (!eq) fprintf(stderr, "  %s: %s\n", label, why);
    return eq;
}

/* Every tensor read by a layer of net (and of its subgraphs, recursively)
 * belongs to net or an enclosing network of it; the count of subgraphs
 * seen is added to *ngraphs. */
static int reads_in_scope(gwr_network *net, int *ngraphs) {
    for (int64_t k = 0; k < gwr_network_num_layers(net); k++) {
        gwr_layer *l = gwr_network_layer(net, k);
        for (int i = 0; i < gwr_layer_num_inputs(l); i++) {
            gwr_tensor *t = gwr_layer_input(l, i);
            if (!t) continue;
            gwr_network *g = net;
            while (g && g != gwr_tensor_network(t)) g = gwr_network_parent(g);
            if (!g) return 0;
        }
        for (int a = 0; a < gwr_layer_num_attrs(l); a++) {
            gwr_attr_type ty = gwr_layer_attr_type(l, a);
            if (ty != GWR_ATTR_GRAPH && ty != GWR_ATTR_GRAPHS) continue;
            gwr_network *const *gs = NULL;
            gwr_network *one = NULL;
            int64_t n = 1;
            if (ty == GWR_ATTR_GRAPH) gwr_layer_get_graph(l, gwr_layer_attr_name(l, a), &one), gs = &one;
            else gwr_layer_get_graphs(l, gwr_layer_attr_name(l, a), &gs, &n);
            for (int64_t j = 0; j < n; j++) {
                if (gwr_network_parent(gs[j]) != net || gwr_network_owner(gs[j]) != l) return 0;
                ++*ngraphs;
                if (!reads_in_scope(gs[j], ngraphs)) return 0;
            }
        }
    }
    return 1;
}

/* What gwr_network_equal does not look at: every layer at the same index
 * (it matches layers without inputs by name), attributes in the same
 * order (it compares them as a set), the removed marks. */
static int same_order(gwr_network *a, gwr_network *b) {
    if (gwr_network_num_layers(a) != gwr_network_num_layers(b)) return 0;
    if (gwr_network_num_live_layers(a) != gwr_network_num_live_layers(b)) return 0;
    for (int64_t k = 0; k < gwr_network_num_layers(a); k++) {
        gwr_layer *la = gwr_network_layer(a, k), *lb = gwr_network_layer(b, k);
        if (strcmp(gwr_layer_name(la), gwr_layer_name(lb))) return 0;
        if (gwr_layer_is_removed(la) != gwr_layer_is_removed(lb)) return 0;
        if (gwr_layer_num_attrs(la) != gwr_layer_num_attrs(lb)) return 0;
        for (int i = 0; i < gwr_layer_num_attrs(la); i++)
            if (strcmp(gwr_layer_attr_name(la, i), gwr_layer_attr_name(lb, i))) return 0;
    }
    return 1;
}

/* ---- a network holding every kind of thing ------------------------------- */

static gwr_buffer *g_buf; /* shared by every weights of kitchen(); the test holds a reference */

static gwr_weights weights(const int64_t *dims, int rank, size_t off, size_t nbytes) {
    return (gwr_weights){GWR_FLOAT32, rank, dims, (const char *)gwr_buffer_data(g_buf) + off, nbytes, g_buf, "w"};
}

/* The body of the If's then-branch: reads x of the root, and holds a
 * nested subgraph that reads x (two levels up) and the branch's own c. */
static gwr_network *then_branch(gwr_network *root, gwr_layer *iff, gwr_tensor *x) {
    gwr_network *g = gwr_network_new_subgraph(gwr_layer_network(iff), "then");
    gwr_tensor *c = gwr_network_add_constant(g, "then_c", &(gwr_weights){GWR_FLOAT32, 0, NULL,
                                                                          gwr_buffer_data(g_buf), 4, g_buf, NULL});
    gwr_layer *add = gwr_network_add_layer(g, "Add", "", "then_add", 2, (gwr_tensor *[]){x, c}, 1, NULL);
    gwr_network_mark_output(g, gwr_layer_output(add, 0));
    /* A Loop-like custom layer holding a nested graph reading x and c. */
    gwr_layer *inner = gwr_network_add_layer(g, "Nest", "test.domain", "nest", 0, NULL, 1, NULL);
    gwr_network *n = gwr_network_new_subgraph(g, "nested");
    gwr_layer *mul = gwr_network_add_layer(n, "Mul", "", "nested_mul", 2, (gwr_tensor *[]){x, c}, 1, NULL);
    gwr_network_mark_output(n, gwr_layer_output(mul, 0));
    gwr_network *ns[1] = {n};
    if (gwr_layer_set_graphs(inner, "bodies", ns, 1)) fprintf(stderr, "set_graphs: %s\n", gwr_network_errmsg(g));
    (void)root;
    return g;
}

static gwr_network *kitchen(void) {
    gwr_network *net = gwr_network_new("kitchen");
    gwr_network_set_prop(net, "producer_name", "test", 4);
    gwr_network_set_prop(net, "bin", "a\0b", 3);
    gwr_network_set_opset(net, "", 17);
    gwr_network_set_opset(net, "test.domain", 2);
    gwr_dim batch = gwr_network_dim_sym(net, "batch"), seq = gwr_network_dim_sym(net, "seq");
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 2, (gwr_dim[]){batch, 4});
    gwr_tensor *y = gwr_network_add_input(net, "y", GWR_FLOAT32, 2, (gwr_dim[]){seq, GWR_DIM_UNKNOWN});
    gwr_tensor_set_prop(x, "doc", "the input", 9);
    static const int64_t d4[1] = {4};
    gwr_weights dw = weights(d4, 1, 0, 16);
    gwr_tensor_set_default(y, &dw);
    gwr_tensor *s = gwr_network_add_input(net, "s", GWR_UNDEFINED, -1, NULL);
    gwr_type elem = {GWR_VALUE_TENSOR, GWR_INT64, 1, (gwr_dim[]){batch}, NULL};
    gwr_type seqt = {GWR_VALUE_SEQUENCE, GWR_UNDEFINED, -1, NULL, &elem};
    gwr_tensor_set_value_type(s, &seqt);

    gwr_tensor *w = gwr_network_add_constant(net, "w", &dw);
    gwr_layer *add = gwr_network_add_layer(net, "Add", "", "add", 2, (gwr_tensor *[]){x, w}, 1, NULL);
    gwr_tensor_set_type(gwr_layer_output(add, 0), GWR_FLOAT32, 2, (gwr_dim[]){batch, 4});
    gwr_tensor_set_prop(gwr_layer_output(add, 0), "k", "v", 1);
    gwr_layer_set_doc(add, "adds w");
    /* Every attribute type, in an order that is not sorted. */
    gwr_layer *p = gwr_network_add_layer(net, "Plug", "test.domain", "plug", 3, (gwr_tensor *[]){NULL, x, NULL}, 2,
                                         (const char *[]){"plug_a", NULL});
    gwr_layer_set_ints(p, "z_ints", (int64_t[]){1, -2, 3}, 3);
    gwr_layer_set_int(p, "int", -7);
    gwr_layer_set_float(p, "nan", NAN);
    gwr_layer_set_float(p, "neg0", -0.0f);
    gwr_layer_set_bytes(p, "bytes", "x\0y", 3);
    gwr_layer_set_string(p, "empty", "");
    gwr_layer_set_floats(p, "floats", (float[]){1.5f, -2.25f}, 2);
    gwr_layer_set_ints(p, "no_ints", NULL, 0);
    gwr_layer_set_bytes_list(p, "strings", (gwr_bytes[]){{.data = "a", .len = 1}, {.data = "b\0c", .len = 3}, {.data = "", .len = 0}}, 3);
    static const int64_t d2[1] = {2};
    gwr_weights tw[2] = {weights(d2, 1, 4, 8), weights(d4, 1, 0, 16)};
    gwr_layer_set_tensor(p, "tensor", &tw[0]);
    gwr_layer_set_tensors(p, "tensors", tw, 2);
    gwr_layer_set_tensors(p, "no_tensors", NULL, 0);
    gwr_layer_set_prop(p, "note", "plugin", 6);
    /* Generated names (kept out of the name maps in the original). */
    gwr_layer *g1 = gwr_network_add_layer(net, "Relu", "", NULL, 1, (gwr_tensor *[]){gwr_layer_output(add, 0)}, 1, NULL);
    gwr_layer *g2 = gwr_network_add_layer(net, "Split", "", NULL, 1, (gwr_tensor *[]){gwr_layer_output(g1, 0)}, 3, NULL);
    /* A read of a later layer: network order is not topological. */
    gwr_layer *fwd = gwr_network_add_layer(net, "Neg", "", "fwd", 1, (gwr_tensor *[]){x}, 1, NULL);
    gwr_layer *late = gwr_network_add_layer(net, "Abs", "", "late", 1, (gwr_tensor *[]){y}, 1, NULL);
    if (gwr_layer_set_input(fwd, 0, gwr_layer_output(late, 0))) fprintf(stderr, "set_input: %s\n", gwr_network_errmsg(net));
    /* An If whose branches read x. */
    gwr_tensor *cond = gwr_network_add_input(net, "cond", GWR_BOOL, 0, NULL);
    gwr_layer *iff = gwr_network_add_layer(net, "If", "", "if", 1, &cond, 1, NULL);
    gwr_network *els = gwr_network_new_subgraph(net, "else");
    gwr_layer *id = gwr_network_add_layer(els, "Identity", "", "else_id", 1, &x, 1, NULL);
    gwr_network_mark_output(els, gwr_layer_output(id, 0));
    gwr_network_set_prop(els, "sub", "prop", 4);
    if (gwr_layer_set_graph(iff, "then_branch", then_branch(net, iff, x)) ||
        gwr_layer_set_graph(iff, "else_branch", els))
        fprintf(stderr, "set_graph: %s\n", gwr_network_errmsg(net));
    /* Removed layers: one dead, one still producing an output marked
     * before the removal. */
    gwr_layer *dead = gwr_network_add_layer(net, "Sigmoid", "", "dead", 1, &x, 1, NULL);
    gwr_layer *rm = gwr_network_add_layer(net, "Tanh", "", "removed_out", 1, &x, 1, NULL);
    gwr_network_mark_output(net, gwr_layer_output(iff, 0));
    gwr_network_mark_output(net, gwr_layer_output(fwd, 0));
    gwr_network_mark_output(net, gwr_layer_output(g2, 2));
    gwr_network_mark_output(net, gwr_layer_output(p, 1));
    gwr_network_mark_output(net, gwr_layer_output(rm, 0));
    gwr_network_mark_output(net, x);
    gwr_layer_mark_as_removed(dead);
    gwr_layer_mark_as_removed(rm);
    return net;
}

TEST(clone_kitchen) {
    g_buf = gwr_buffer_new_copy((float[]){1, 2, 3, 4}, 16);
    gwr_network *a = kitchen(), *a2 = kitchen();
    if (!CHECK(equal(a, a2, "kitchen built twice"))) return;
    CHECK_OK(gwr_network_verify(a));
    gwr_network *b = gwr_network_clone(a);
    if (!CHECK(b != NULL)) {
        fprintf(stderr, "  %s\n", gwr_last_errmsg());
        return;
    }
    CHECK(equal(a, b, "clone"));
    CHECK(same_order(a, b));
    CHECK_OK(gwr_network_verify(b));
    int ng = 0;
    CHECK(reads_in_scope(b, &ng));
    CHECK_EQ_INT(ng, 3);
    /* Symbols keep their values; removed marks and counts stay. */
    CHECK_EQ_INT(gwr_tensor_dim(gwr_network_input(b, 0), 0), gwr_tensor_dim(gwr_network_input(a, 0), 0));
    CHECK(gwr_layer_is_removed(gwr_network_find_layer(b, "dead")));
    CHECK(gwr_layer_is_removed(gwr_network_find_layer(b, "removed_out")));
    CHECK_EQ_INT(gwr_network_num_live_layers(b), gwr_network_num_live_layers(a));
    /* Weights share the buffer; the default value too. */
    const gwr_weights *wa = NULL, *wb = NULL;
    gwr_layer_get_tensor(gwr_network_find_layer(a, "plug"), "tensor", &wa);
    gwr_layer_get_tensor(gwr_network_find_layer(b, "plug"), "tensor", &wb);
    CHECK(wa && wb && wa->buffer == wb->buffer && wa->data == wb->data);
    CHECK(gwr_tensor_default(gwr_network_input(b, 1))->buffer == g_buf);
    /* The copy generates the names the original would. */
    gwr_tensor *xa = gwr_network_input(a, 0), *xb = gwr_network_input(b, 0);
    gwr_layer *na = gwr_network_add_layer(a, "Relu", "", NULL, 1, &xa, 1, NULL);
    gwr_layer *nb = gwr_network_add_layer(b, "Relu", "", NULL, 1, &xb, 1, NULL);
    CHECK_STR(gwr_layer_name(nb), gwr_layer_name(na));
    CHECK(equal(a, b, "after the same change"));
    /* A change to the copy is not seen by the original, nor the reverse. */
    CHECK_OK(gwr_layer_set_name(gwr_network_find_layer(b, "add"), "renamed"));
    CHECK_OK(gwr_layer_set_int(gwr_network_find_layer(b, "plug"), "int", 8));
    gwr_network *then_b = NULL;
    gwr_layer_get_graph(gwr_network_find_layer(b, "if"), "then_branch", &then_b);
    CHECK_OK(gwr_layer_set_name(gwr_network_find_layer(then_b, "then_add"), "then_renamed"));
    gwr_network_add_layer(a2, "Relu", "", NULL, 1, (gwr_tensor *[]){gwr_network_input(a2, 0)}, 1, NULL);
    CHECK(equal(a, a2, "original after changing the copy"));
    CHECK(!gwr_network_equal(a, b, NULL, 0));
    CHECK_OK(gwr_layer_set_float(gwr_network_find_layer(a, "plug"), "nan", 1.0f));
    float f = 0;
    gwr_layer_get_float(gwr_network_find_layer(b, "plug"), "nan", &f);
    CHECK(f != f);
    /* Freeing the original first leaves the copy whole. */
    gwr_network_free(a);
    gwr_network *c = gwr_network_clone(b);
    CHECK_OK(gwr_network_verify(b));
    CHECK(c && equal(b, c, "clone of the clone"));
    gwr_network_free(b);
    CHECK_OK(gwr_network_verify(c));
    gwr_network_free(c);
    gwr_network_free(a2);
    gwr_buffer_release(g_buf);
}

/* ---- bad arguments ----------------------------------------------------------- */

TEST(clone_bad_args) {
    CHECK(gwr_network_clone(NULL) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "NULL network");
    gwr_network *net = gwr_network_new("n");
    gwr_network *sub = gwr_network_new_subgraph(net, "sub");
    CHECK(gwr_network_clone(sub) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "subgraph");
    gwr_network_free(sub);
    /* An empty network clones to an empty one. */
    gwr_network *e = gwr_network_clone(net);
    CHECK(e && equal(net, e, "empty"));
    CHECK_EQ_INT(gwr_network_num_layers(e), 0);
    gwr_network_free(e);
    gwr_network_free(net);
}

/* ---- the functional API --------------------------------------------------------- */

TEST(clone_gpt) {
    for (int plugin = 0; plugin <= 1; plugin++) {
        gwr_network *a = gwr_network_new("gpt");
        gwr_gpt_config cfg = {.blocks = 2, .hidden = 16, .heads = 2, .use_plugin = plugin, .seed = 3};
        if (!CHECK(gwr_build_gpt(a, &cfg) != NULL)) {
            fprintf(stderr, "  %s\n", gwr_network_errmsg(a));
            gwr_network_free(a);
            continue;
        }
        gwr_network *b = gwr_network_clone(a);
        if (!CHECK(b != NULL)) fprintf(stderr, "  %s\n", gwr_last_errmsg());
        CHECK(b && equal(a, b, plugin ? "gpt (plugin)" : "gpt"));
        CHECK(b && same_order(a, b));
        CHECK(b && gwr_network_verify(b) == GWR_OK);
        /* FLayerInfos are the memo's, and not copied. */
        int64_t nf_a = 0, nf_b = 0;
        for (int64_t k = 0; b && k < gwr_network_num_layers(a); k++) {
            nf_a += gwr_flayer_get(a, gwr_network_layer(a, k)) != NULL;
            nf_b += gwr_flayer_get(b, gwr_network_layer(b, k)) != NULL;
        }
        if (plugin) CHECK(nf_a > 0);
        CHECK_EQ_INT(nf_b, 0);
        gwr_network_free(a);
        CHECK(b && gwr_network_verify(b) == GWR_OK);
        gwr_network_free(b);
    }
}

/* ---- the ONNX backend test data -------------------------------------------------- */

typedef struct backend_counts {
    int models, loaded, cloned, with_graphs, verified;
} backend_counts;

/* One model: clone it and compare; change the copy and compare the
 * original with a second load of the file; free the original and use the
 * copy. */
static void clone_model(const char *path, backend_counts *n) {
    n->models++;
    gwr_network *a = gwr_onnx_load(path, NULL);
    if (!a) return;
    n->loaded++;
    gwr_network *b = gwr_network_clone(a);
    if (!CHECK(b != NULL)) {
        fprintf(stderr, "  %s: %s\n", path, gwr_last_errmsg());
        gwr_network_free(a);
        return;
    }
    n->cloned++;
    if (!CHECK(equal(a, b, path) && same_order(a, b))) fprintf(stderr, "  %s: clone differs\n", path);
    int ng = 0;
    if (!CHECK(reads_in_scope(b, &ng))) fprintf(stderr, "  %s: the clone reads another network\n", path);
    n->with_graphs += ng > 0;
    int va = gwr_network_verify(a) == GWR_OK, vb = gwr_network_verify(b) == GWR_OK;
    if (!CHECK_EQ_INT(vb, va)) fprintf(stderr, "  %s: verify %d vs %d: %s\n", path, va, vb, gwr_network_errmsg(b));
    n->verified += vb;
    /* Change the copy: rename a layer, set an attribute, add a layer. */
    gwr_network *again = gwr_onnx_load(path, NULL);
    if (gwr_network_num_layers(b) > 0) {
        gwr_layer *l = gwr_network_layer(b, 0);
        CHECK_OK(gwr_layer_set_name(l, "__clone_renamed"));
        CHECK_OK(gwr_layer_set_int(l, "__clone_attr", 1));
    }
    gwr_tensor *in = gwr_network_num_inputs(b) ? gwr_network_input(b, 0) : NULL;
    CHECK(gwr_network_add_layer(b, "Identity", "", "__clone_added", in ? 1 : 0, &in, 1, NULL) != NULL);
    if (!CHECK(again && equal(a, again, path))) fprintf(stderr, "  %s: the original changed\n", path);
    CHECK(!gwr_network_equal(a, b, NULL, 0));
    /* The original goes first; the copy still reads (weights included)
     * and writes. */
    gwr_network_free(a);
    CHECK(!gwr_network_equal(again, b, NULL, 0));
    CHECK_EQ_INT(gwr_network_verify(b) == GWR_OK, vb);
    void *data = NULL;
    size_t size = 0;
    if (gwr_onnx_save_memory(b, &data, &size) == GWR_OK) free(data);
    gwr_network_free(b);
    gwr_network_free(again);
}

TEST(clone_backend_models) {
    static const char *const suites[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};
    backend_counts n = {0};
    for (size_t s = 0; s < sizeof suites / sizeof *suites; s++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", TESTDATA, suites[s]);
        DIR *d = opendir(dir);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[1024];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s/model.onnx", dir, e->d_name);
            if (stat(path, &st) == 0) clone_model(path, &n);
        }
        closedir(d);
    }
    printf("backend models: %d found, %d loaded, %d cloned and compared (%d with subgraphs), %d verified\n",
           n.models, n.loaded, n.cloned, n.with_graphs, n.verified);
    CHECK(n.models > 1000);
    CHECK_EQ_INT(n.cloned, n.loaded);
    CHECK(n.with_graphs > 10);
}

/* ---- out of memory ------------------------------------------------------------------ */

/* Every allocation of a clone of kitchen() failing in turn, once alone and
 * once with all later ones: NULL with a message, or (when the code could
 * do without the allocation) a full copy; nothing leaks. */
TEST(clone_alloc_fail) {
    g_buf = gwr_buffer_new_copy((float[]){1, 2, 3, 4}, 16);
    gwr_network *a = kitchen();
    int runs = 0;
    for (int sticky = 0; sticky <= 1; sticky++)
        for (int64_t k = 1; k < 100000; k++) {
            gwr_alloc_hook_arm(k, sticky);
            gwr_network *b = gwr_network_clone(a);
            int64_t failed = gwr_alloc_hook_failures();
            gwr_alloc_hook_arm(0, 0);
            runs++;
            if (b) {
                if (!CHECK(equal(a, b, "clone after a failed allocation"))) k = 100000;
                gwr_network_free(b);
            } else if (!CHECK(*gwr_last_errmsg() && failed > 0)) {
                k = 100000;
            }
            if (!failed) break;
        }
    printf("clone under failing allocations: %d runs\n", runs);
    CHECK(runs > 100);
    CHECK_OK(gwr_network_verify(a));
    gwr_network_free(a);
    gwr_buffer_release(g_buf);
}

int main(void) {
    RUN(clone_kitchen);
    RUN(clone_bad_args);
    RUN(clone_gpt);
    RUN(clone_backend_models);
    RUN(clone_alloc_fail);
    return check_report();
}
