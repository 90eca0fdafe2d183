/* test_fuse_rotary.c - fuse_rotary and lower_rotary (src/passes/fuse_rotary.c) on hand-built
 * graphs of Hugging Face's apply_rotary_pos_emb (rotate-half): where they fire, with the
 * outputs of the unfused graph (gwr's executor) within the pass's tolerance, and where they must
 * not. tests/llm/norm_rope_ort.py runs the decoder fixtures' results on onnxruntime. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gwr/gwr.h"
#include "pass_test.h"

enum {
    R_SPLIT = 0,     /* the halves by one Split */
    R_SLICE = 1,     /* by two Slices */
    R_SCALE = 2,     /* cos and sin times the attention scaling */
    R_TWO = 4,       /* q and k: two rotations sharing the caches */
    /* must not fire */
    R_SWAPPED = 8,   /* Concat(x1, -x2): the other rotation */
    R_NO_NEG = 16,   /* Concat(x2, x1) */
    R_UNEQUAL = 32,  /* Split [3, 5] */
    R_ROT_OUT = 64,  /* the rotated half also an output */
    R_OTHER_F = 128, /* sin from another F */
    R_AXIS2 = 256,   /* the caches unsqueezed at axis 2 */
    /* partial rotary (GPT-NeoX, Phi): q of 12, the first 8 rotated, the last 4 passed */
    R_PARTIAL = 512,       /* by two Slices */
    R_PARTIAL_SPLIT = 1024, /* by Split [8, 4] */
    R_PASS_SWAPPED = 2048,  /* Concat(pass, rotated): must not take the Concat */
};

static unsigned flags;

/* Unsqueeze(fn(Concat(f, f)) [* 0.75], axes [ax]) */
static gwr_tensor *trig(gwr_network *net, gwr_tensor *f, int cosine, int64_t ax) {
    gwr_tensor *ff[2] = {f, f}, *t = gwr_concat(net, 2, ff, -1);
    t = cosine ? gwr_cos(net, t) : gwr_sin(net, t);
    if (flags & R_SCALE) t = gwr_mul(net, t, gwr_constant_f32(net, 0.75f));
    return gwr_unsqueeze(net, t, 1, &ax);
}

static gwr_tensor *rotate(gwr_network *net, gwr_tensor *x, gwr_tensor *c, gwr_tensor *s) {
    static const int64_t z[1] = {0}, h[1] = {4}, e[1] = {8}, last[1] = {-1};
    gwr_tensor *x1, *x2;
    if (flags & R_SLICE) {
        x1 = gwr_slice(net, x, 1, z, h, last, NULL);
        x2 = gwr_slice(net, x, 1, h, e, last, NULL);
    } else {
        gwr_tensor *o[2] = {NULL, NULL};
        static const int64_t eq[2] = {4, 4}, uneq[2] = {3, 5};
        gwr_split(net, x, -1, 2, flags & R_UNEQUAL ? uneq : eq, o);
        x1 = o[0], x2 = o[1];
    }
    gwr_tensor *n = flags & R_NO_NEG ? x2 : gwr_neg(net, x2);
    gwr_tensor *parts[2] = {n, x1};
    if (flags & R_SWAPPED) parts[0] = x1, parts[1] = n;
    gwr_tensor *rot = gwr_concat(net, 2, parts, -1);
    if (flags & R_ROT_OUT) gwr_network_mark_output(net, gwr_relu(net, rot));
    return gwr_add(net, gwr_mul(net, x, c), gwr_mul(net, rot, s));
}

/* q's first 8 rotated, the rest passed (R_PARTIAL*); else q rotated whole */
static gwr_tensor *rotate_q(gwr_network *net, gwr_tensor *q, gwr_tensor *c, gwr_tensor *s) {
    if (!(flags & (R_PARTIAL | R_PARTIAL_SPLIT))) return rotate(net, q, c, s);
    static const int64_t z[1] = {0}, r[1] = {8}, e[1] = {12}, last[1] = {-1}, sizes[2] = {8, 4};
    gwr_tensor *o[2] = {NULL, NULL};
    if (flags & R_PARTIAL_SPLIT) gwr_split(net, q, -1, 2, sizes, o);
    else o[0] = gwr_slice(net, q, 1, z, r, last, NULL), o[1] = gwr_slice(net, q, 1, r, e, last, NULL);
    gwr_tensor *rot = rotate(net, o[0], c, s), *parts[2] = {rot, o[1]};
    if (flags & R_PASS_SWAPPED) parts[0] = o[1], parts[1] = rot;
    return gwr_concat(net, 2, parts, -1);
}

static gwr_network *rotary(void) {
    gwr_dim xd[4] = {2, 3, 5, flags & (R_PARTIAL | R_PARTIAL_SPLIT) ? 12 : 8}, fd[3] = {2, 5, 4};
    gwr_network *net = gwr_network_new("rotary");
    gwr_tensor *q = gwr_network_add_input(net, "q", GWR_FLOAT32, 4, xd);
    gwr_tensor *f = gwr_network_add_input(net, "f", GWR_FLOAT32, 3, fd);
    gwr_tensor *f2 = flags & R_OTHER_F ? gwr_network_add_input(net, "f2", GWR_FLOAT32, 3, fd) : f;
    int64_t ax = flags & R_AXIS2 ? 2 : 1;
    gwr_tensor *c = trig(net, f, 1, ax), *s = trig(net, f2, 0, ax);
    gwr_network_mark_output(net, rotate_q(net, q, c, s));
    if (flags & R_TWO) {
        xd[1] = 2;
        gwr_network_mark_output(net, rotate(net, gwr_network_add_input(net, "k", GWR_FLOAT32, 4, xd), c, s));
    }
    return net;
}

static gwr_tensor *op1(gwr_network *net, const char *op, int nin, gwr_tensor *const *in) {
    gwr_tensor *y = NULL;
    return gwr_op_call(net, "", op, nin, in, NULL, 1, &y) ? y : NULL;
}

static int64_t live(gwr_network *net, const char *op) {
    CHECK_OK(gwr_network_prune(net, NULL));
    return count_op(net, op);
}

TEST(rotary_fires) {

    static const unsigned forms[] = {R_SPLIT, R_SLICE, R_SCALE, R_SLICE | R_SCALE, R_TWO, R_TWO | R_SCALE};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        flags = forms[i];
        int n = flags & R_TWO ? 2 : 1;
        expect(rotary(), "fuse_rotary", GWR_TARGET_GWR, n, 3);
        gwr_network *net = rotary();
        CHECK_EQ_INT(run_pass(net, "fuse_rotary", GWR_TARGET_GWR), n);
        if (!CHECK_EQ_INT(live(net, "RotaryEmbedding"), n)) fprintf(stderr, "  form %u\n", flags);
        /* one Cos and one Sin, on F itself (no Concat), shared by both rotations */
        CHECK_EQ_INT(count_op(net, "Cos"), 1);
        CHECK_EQ_INT(count_op(net, "Sin"), 1);
        CHECK_EQ_INT(count_op(net, "Concat") + count_op(net, "Neg") + count_op(net, "Split") + count_op(net, "Slice"), 0);
        CHECK_EQ_INT(count_op(net, "Mul"), flags & R_SCALE ? 2 : 0);
        gwr_network_free(net);
    }
}

/* target gwr in an opset-18 model (the stock exports'): gwr's executor runs the result */
TEST(rotary_gwr_opset18_runs) {
    flags = R_TWO;
    gwr_network *net = rotary();
    gwr_network_set_opset(net, "", 18);
    expect(net, "fuse_rotary", GWR_TARGET_GWR, 2, 3);
}

TEST(rotary_must_not_fire) {
    static const unsigned forms[] = {R_SWAPPED, R_NO_NEG, R_UNEQUAL, R_ROT_OUT, R_OTHER_F, R_AXIS2, R_SLICE | R_SWAPPED};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        flags = forms[i];
        if (!CHECK_EQ_INT(expect(rotary(), "fuse_rotary", GWR_TARGET_GWR, 0, 3), 0)) fprintf(stderr, "  form %u\n", flags);
    }
    /* target onnx: only from opset 23, where ONNX has RotaryEmbedding */
    flags = R_SPLIT;
    gwr_network *net = rotary();
    gwr_network_set_opset(net, "", 18);
    expect(net, "fuse_rotary", GWR_TARGET_ONNX, 0, 3);
    net = rotary();
    gwr_network_set_opset(net, "", 23);
    expect(net, "fuse_rotary", GWR_TARGET_ONNX, 1, 3);
}

/* lower_rotary: target ort below opset 23, com.microsoft RotaryEmbedding on (B * S) rows of the
 * caches, built once for both rotations, the same numbers (gwr's kernels of both ops; onnxruntime
 * runs the result in tests/llm/norm_rope_ort.py); at opset 23 the ONNX op stays. */
static int64_t ms_rotaries(gwr_network *net) {
    int64_t n = 0;
    for (int64_t i = 0; i < gwr_network_num_layers(net); i++) {
        gwr_layer *l = gwr_network_layer(net, i);
        n += !gwr_layer_is_removed(l) && !strcmp(gwr_layer_op(l), "RotaryEmbedding") && !strcmp(gwr_layer_domain(l), "com.microsoft");
    }
    return n;
}

TEST(rotary_for_ort) {
    static const int64_t opsets[2] = {18, 23};
    static const unsigned forms[3] = {R_TWO | R_SCALE, R_PARTIAL, R_TWO};
    for (int f = 0; f < 3; f++)
        for (int k = 0; k < 2; k++) {
            flags = forms[f];
            gwr_network *net = rotary();
            gwr_network_set_opset(net, "", opsets[k]);
            gwr_network *before = gwr_network_clone(net);
            gwr_optimize_options o = {.only = "fuse_rotary,lower_rotary", .target = GWR_TARGET_ORT, .debug = 1};
            CHECK_OK(gwr_optimize(net, &o, NULL));
            int n = flags & R_TWO ? 2 : 1;
            CHECK_EQ_INT(live(net, "RotaryEmbedding"), n);
            if (!CHECK_EQ_INT(ms_rotaries(net), k ? 0 : n)) fprintf(stderr, "  form %u opset %lld\n", flags, (long long)opsets[k]);
            CHECK_EQ_INT(count_op(net, "Range"), k ? 0 : 1); /* the row ids, once */
            for (unsigned seed = 1; seed <= 3; seed++) {
                double d = max_diff(before, net, seed * 7919u, 3, 0, NULL);
                if (!CHECK(d >= 0 && d <= 1e-5)) fprintf(stderr, "  form %u opset %lld: difference %g\n", flags, (long long)opsets[k], d);
            }
            gwr_network_free(before);
            gwr_network_free(net);
        }
}

/* partial rotary: one RotaryEmbedding over q whole with rotary_embedding_dim 8 (gwr's kernel passes
 * the last 4 through); with the Concat the other way round, only the inner rotation fuses */
TEST(rotary_partial) {
    static const unsigned forms[] = {R_PARTIAL, R_PARTIAL_SPLIT, R_PARTIAL | R_SCALE, R_PARTIAL | R_PASS_SWAPPED};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        flags = forms[i];
        int whole = !(flags & R_PASS_SWAPPED);
        expect(rotary(), "fuse_rotary", GWR_TARGET_GWR, whole ? 2 : 1, 3); /* the rotation, then the Concat */
        gwr_network *net = rotary();
        CHECK_EQ_INT(run_pass(net, "fuse_rotary", GWR_TARGET_GWR), whole ? 2 : 1);
        CHECK_EQ_INT(live(net, "RotaryEmbedding"), 1);
        CHECK_EQ_INT(count_op(net, "Concat") + count_op(net, "Slice") + count_op(net, "Split"), whole ? 0 : 3);
        for (int64_t l = 0; l < gwr_network_num_layers(net); l++) {
            gwr_layer *ly = gwr_network_layer(net, l);
            int64_t rd = -1;
            if (gwr_layer_is_removed(ly) || strcmp(gwr_layer_op(ly), "RotaryEmbedding")) continue;
            gwr_layer_attr_int(ly, "rotary_embedding_dim", 0, &rd);
            if (!CHECK_EQ_INT(rd, whole ? 8 : 0)) fprintf(stderr, "  form %u\n", flags);
            CHECK_EQ_INT(gwr_tensor_dim(gwr_layer_input(ly, 0), 3), whole ? 12 : 8);
        }
        gwr_network_free(net);
    }
}

/* The cached form (older exports, Phi-2): c = Gather(T_cos, position_ids), T (16, 8) with equal halves
 * (cos of Concat(freqs, freqs) computed ahead); position_ids = Abs(p) (indices in range). Fires:
 * RotaryEmbedding(q, T_cos[:, :4], T_sin[:, :4], position_ids); must not: the halves differ, or
 * cos and sin gathered by different positions. */
enum { T_PLAIN, T_UNEQUAL, T_OTHER_POS };
static int table_form;
static gwr_network *table_net(void) {
    float tc[16 * 8], ts[16 * 8];
    for (int r = 0; r < 16; r++)
        for (int j = 0; j < 4; j++) {
            float a = (float)r * (j ? 1.0f / (float)(10 * j) : 1.0f);
            tc[r * 8 + j] = tc[r * 8 + 4 + j] = cosf(a), ts[r * 8 + j] = ts[r * 8 + 4 + j] = sinf(a);
        }
    if (table_form == T_UNEQUAL) tc[8 * 3 + 5] += 0.5f;
    gwr_network *net = gwr_network_new("rotary_table");
    gwr_dim xd[4] = {2, 3, 5, 8}, pd[2] = {2, 5};
    int64_t td[2] = {16, 8}, one = 1;
    gwr_tensor *q = gwr_network_add_input(net, "q", GWR_FLOAT32, 4, xd);
    gwr_tensor *p = gwr_network_add_input(net, "p", GWR_INT64, 2, pd), *pos = op1(net, "Abs", 1, &p), *pos2 = pos;
    if (table_form == T_OTHER_POS) pos2 = op1(net, "Abs", 1, &pos);
    gwr_tensor *gc[2] = {gwr_constant(net, GWR_FLOAT32, 2, td, tc), pos}, *gs[2] = {gwr_constant(net, GWR_FLOAT32, 2, td, ts), pos2};
    gwr_tensor *c = gwr_unsqueeze(net, op1(net, "Gather", 2, gc), 1, &one), *s = gwr_unsqueeze(net, op1(net, "Gather", 2, gs), 1, &one);
    flags = R_SPLIT;
    gwr_network_mark_output(net, rotate(net, q, c, s));
    return net;
}

TEST(rotary_cached_tables) {
    for (table_form = T_PLAIN; table_form <= T_OTHER_POS; table_form++) {
        int fires = table_form == T_PLAIN;
        expect(table_net(), "fuse_rotary", GWR_TARGET_GWR, fires, 3);
        gwr_network *net = table_net();
        CHECK_EQ_INT(run_pass(net, "fuse_rotary", GWR_TARGET_GWR), fires);
        CHECK_EQ_INT(live(net, "RotaryEmbedding"), fires);
        CHECK_EQ_INT(count_op(net, "Gather"), fires ? 0 : 2);
        gwr_network_free(net);
    }
    table_form = T_PLAIN; /* target ort below 23: com.microsoft's, position_ids its input 1, no row ids */
    gwr_network *net = table_net();
    gwr_network_set_opset(net, "", 18);
    gwr_network *before = gwr_network_clone(net);
    gwr_optimize_options o = {.only = "fuse_rotary,lower_rotary", .target = GWR_TARGET_ORT, .debug = 1};
    CHECK_OK(gwr_optimize(net, &o, NULL));
    CHECK_EQ_INT(ms_rotaries(net), 1);
    CHECK_EQ_INT(count_op(net, "Range"), 0);
    double d = max_diff(before, net, 7919u, 3, 0, NULL);
    if (!CHECK(d >= 0 && d <= 1e-5)) fprintf(stderr, "  cached, lowered: difference %g\n", d);
    gwr_network_free(before);
    gwr_network_free(net);
}

/* gwr's com.microsoft RotaryEmbedding kernel: position_ids (B, S), and the one-element offset form
 * (positions offset + s), against ONNX RotaryEmbedding with the positions written out (B = 1). */
TEST(ms_kernel_offset_form) {
    float cv[8 * 4], sv[8 * 4];
    for (int i = 0; i < 32; i++) cv[i] = cosf(0.3f * (float)i), sv[i] = sinf(0.3f * (float)i);
    static const int64_t off[1] = {2}, full[3] = {2, 3, 4};
    int64_t cd[2] = {8, 4}, p1 = 1, p2[2] = {1, 3};
    for (int form = 0; form < 2; form++) {
        gwr_network *net = gwr_network_new("ms_rotary");
        gwr_dim xd[4] = {1, 2, 3, 8};
        gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd);
        gwr_tensor *c = gwr_constant(net, GWR_FLOAT32, 2, cd, cv), *s = gwr_constant(net, GWR_FLOAT32, 2, cd, sv);
        gwr_tensor *pos = form ? gwr_constant(net, GWR_INT64, 1, &p1, off) : gwr_constant(net, GWR_INT64, 2, p2, full);
        gwr_tensor *ms_in[4] = {x, pos, c, s}, *onnx_in[4] = {x, c, s, gwr_constant(net, GWR_INT64, 2, p2, full)}, *a = NULL, *b = NULL;
        CHECK(gwr_op_call(net, "com.microsoft", "RotaryEmbedding", 4, ms_in, NULL, 1, &a) != NULL);
        CHECK(gwr_op_call(net, "", "RotaryEmbedding", 4, onnx_in, NULL, 1, &b) != NULL);
        gwr_network_mark_output(net, a);
        gwr_network_mark_output(net, b);
        gwr_value *in = gwr_value_new(GWR_FLOAT32, 4, (const int64_t[]){1, 2, 3, 8}), *out[8] = {0};
        for (int64_t i = 0; i < 48; i++) gwr_value_set_f64(in, i, 0.1 * (double)(i % 7) - 0.3);
        const char *names[1] = {"x"};
        if (CHECK_EQ_INT(run_net(net, 1, names, &in, out), 2))
            for (int64_t i = 0; i < 48; i++)
                if (!CHECK(gwr_value_get_f64(out[0], i) == gwr_value_get_f64(out[1], i))) break;
        for (int i = 0; i < 8; i++) gwr_value_release(out[i]);
        gwr_value_release(in);
        gwr_network_free(net);
    }
}

/* The interleaved form (GPT-J's rotate_every_two, as torch exports it):
 *   y = x * R(c) + Reshape(Concat(Unsqueeze(Neg(x[..., 1::2]), -1), Unsqueeze(x[..., 0::2], -1), axis -1)) * R(s)
 *   R(c) = Reshape(Tile(Unsqueeze(c, [ax, 4]), [1, 1, 1, 1, 2]), (0, 0, k, -1))   (repeat_interleave)
 * with c, s inputs (B, S, R/2). I_HEADS: GPT-J's x (B, S, N, D) = (2, 5, 3, 12), its first 8 rotated
 * (ax 2) and the last 4 Concat'ed back; else x (B, N, S, D) = (2, 3, 5, 8) whole (ax 1). */
enum {
    I_HEADS = 1,
    /* must not fire */
    I_SWAPPED = 2, /* stack(x_even, -x_odd): the other rotation */
    I_SAME = 4,    /* both halves x[..., 0::2] */
    I_REPEAT = 8,  /* Tile [1, 1, 1, 2, 1]: repeat, not repeat_interleave */
    I_AXES = 16,   /* sin unsqueezed for the other layout */
    I_ROT_OUT = 32 /* the rotated x also an output */
};
static unsigned iflags;

static gwr_tensor *repeat2(gwr_network *net, gwr_tensor *c, int64_t ax) {
    static const int64_t inter[5] = {1, 1, 1, 1, 2}, rep[5] = {1, 1, 1, 2, 1};
    int64_t axes[2] = {ax, 4}, five = 5, shp[4] = {0, 0, ax == 2 ? 1 : 0, -1};
    gwr_tensor *ti[2] = {gwr_unsqueeze(net, c, 2, axes), gwr_constant(net, GWR_INT64, 1, &five, iflags & I_REPEAT ? rep : inter)};
    return gwr_reshape(net, op1(net, "Tile", 2, ti), 4, shp);
}

static gwr_tensor *rotate_every_two(gwr_network *net, gwr_tensor *x, gwr_tensor *c, gwr_tensor *s) {
    static const int64_t zero = 0, one = 1, big = INT64_MAX, last = -1, two = 2, four = 4;
    int heads = iflags & I_HEADS;
    int64_t shp[4] = {0, 0, 0, -1};
    gwr_tensor *xe = gwr_slice(net, x, 1, &zero, &big, &last, &two), *xo = gwr_slice(net, x, 1, iflags & I_SAME ? &zero : &one, &big, &last, &two);
    gwr_tensor *parts[2] = {gwr_unsqueeze(net, gwr_neg(net, xo), 1, &four), gwr_unsqueeze(net, xe, 1, &four)};
    if (iflags & I_SWAPPED) parts[0] = gwr_unsqueeze(net, xe, 1, &four), parts[1] = gwr_unsqueeze(net, gwr_neg(net, xo), 1, &four);
    gwr_tensor *rot = gwr_reshape(net, gwr_concat(net, 2, parts, -1), 4, shp);
    if (iflags & I_ROT_OUT) gwr_network_mark_output(net, gwr_relu(net, rot));
    int64_t ax = heads ? 2 : 1, sax = iflags & I_AXES ? 3 - ax : ax;
    return gwr_add(net, gwr_mul(net, x, repeat2(net, c, ax)), gwr_mul(net, rot, repeat2(net, s, sax)));
}

static gwr_network *interleaved_net(void) {
    int heads = iflags & I_HEADS;
    /* I_AXES: N = S = 5, so that both layouts broadcast */
    gwr_dim xd[4] = {2, heads || iflags & I_AXES ? 5 : 3, heads && !(iflags & I_AXES) ? 3 : 5, heads ? 12 : 8}, cd[3] = {2, 5, 4};
    gwr_network *net = gwr_network_new("rotary_interleaved");
    gwr_tensor *q = gwr_network_add_input(net, "q", GWR_FLOAT32, 4, xd);
    gwr_tensor *c = gwr_network_add_input(net, "c", GWR_FLOAT32, 3, cd), *s = gwr_network_add_input(net, "s", GWR_FLOAT32, 3, cd);
    if (!heads) {
        gwr_network_mark_output(net, rotate_every_two(net, q, c, s));
        return net;
    }
    static const int64_t z[1] = {0}, r[1] = {8}, e[1] = {INT64_MAX}, lastax[1] = {-1};
    gwr_tensor *parts[2] = {rotate_every_two(net, gwr_slice(net, q, 1, z, r, lastax, NULL), c, s), gwr_slice(net, q, 1, r, e, lastax, NULL)};
    gwr_network_mark_output(net, gwr_concat(net, 2, parts, -1));
    return net;
}

/* the one RotaryEmbedding's attributes: interleaved, rotary_embedding_dim, num_heads (-1: absent) */
static void rotary_attrs(gwr_network *net, int64_t a[3]) {
    static const char *const names[3] = {"interleaved", "rotary_embedding_dim", "num_heads"};
    a[0] = a[1] = a[2] = -2;
    for (int64_t l = 0; l < gwr_network_num_layers(net); l++) {
        gwr_layer *ly = gwr_network_layer(net, l);
        if (gwr_layer_is_removed(ly) || strcmp(gwr_layer_op(ly), "RotaryEmbedding")) continue;
        for (int k = 0; k < 3; k++) gwr_layer_attr_int(ly, names[k], -1, &a[k]);
    }
}

TEST(rotary_interleaved) {
    for (int heads = 0; heads < 2; heads++) {
        iflags = heads ? I_HEADS : 0;
        int n = heads ? 2 : 1; /* the rotation, then (heads) the partial Concat */
        expect(interleaved_net(), "fuse_rotary", GWR_TARGET_GWR, n, 3);
        gwr_network *net = interleaved_net();
        CHECK_EQ_INT(run_pass(net, "fuse_rotary", GWR_TARGET_GWR), n);
        CHECK_EQ_INT(live(net, "RotaryEmbedding"), 1);
        CHECK_EQ_INT(count_op(net, "Neg") + count_op(net, "Tile") + count_op(net, "Slice") + count_op(net, "Concat"), 0);
        int64_t a[3];
        rotary_attrs(net, a);
        CHECK_EQ_INT(a[0], 1);
        CHECK_EQ_INT(a[1], heads ? 8 : -1);
        CHECK_EQ_INT(a[2], heads ? 3 : -1);
        gwr_network_free(net);
        /* target ort at opset 18: com.microsoft's, the same numbers */
        net = interleaved_net();
        gwr_network_set_opset(net, "", 18);
        gwr_network *before = gwr_network_clone(net);
        gwr_optimize_options o = {.only = "fuse_rotary,lower_rotary", .target = GWR_TARGET_ORT, .debug = 1};
        CHECK_OK(gwr_optimize(net, &o, NULL));
        CHECK_EQ_INT(ms_rotaries(net), 1);
        double d = max_diff(before, net, 7919u, 3, 0, NULL);
        if (!CHECK(d >= 0 && d <= 1e-5)) fprintf(stderr, "  interleaved heads %d, lowered: difference %g\n", heads, d);
        gwr_network_free(before);
        gwr_network_free(net);
    }
}

TEST(rotary_interleaved_must_not_fire) {
    static const unsigned forms[] = {I_SWAPPED, I_SAME, I_REPEAT, I_AXES, I_ROT_OUT, I_HEADS | I_SWAPPED, I_HEADS | I_REPEAT, I_HEADS | I_AXES};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        iflags = forms[i];
        gwr_network *net = interleaved_net();
        CHECK_EQ_INT(count_op(net, "Add"), 1); /* built whole */
        if (!CHECK_EQ_INT(run_pass(net, "fuse_rotary", GWR_TARGET_GWR), 0)) fprintf(stderr, "  form %u\n", iflags);
        CHECK_EQ_INT(count_op(net, "RotaryEmbedding"), 0);
        gwr_network_free(net);
    }
}

/* gwr's kernel, interleaved (ONNX RotaryEmbedding-23: pairs (x[2i], x[2i + 1]) turned by cos[i], sin[i]),
 * against the spec's formula written out, partial (the rest copied), x (B, N, S, D) = (1, 1, 2, 6), R 4 */
TEST(kernel_interleaved) {
    float cv[2 * 2] = {0.5f, -0.25f, 0.75f, 1.0f}, sv[2 * 2] = {0.125f, 2.0f, -1.0f, 0.5f};
    int64_t cd[3] = {1, 2, 2};
    gwr_network *net = gwr_network_new("kernel_interleaved");
    gwr_dim xd[4] = {1, 1, 2, 6};
    gwr_tensor *x = gwr_network_add_input(net, "x", GWR_FLOAT32, 4, xd), *y = NULL;
    gwr_tensor *in[3] = {x, gwr_constant(net, GWR_FLOAT32, 3, cd, cv), gwr_constant(net, GWR_FLOAT32, 3, cd, sv)};
    gwr_args *a = gwr_args_new();
    CHECK_OK(gwr_args_set_int(a, "interleaved", 1));
    CHECK_OK(gwr_args_set_int(a, "rotary_embedding_dim", 4));
    CHECK(gwr_op_call(net, "", "RotaryEmbedding", 3, in, a, 1, &y) != NULL);
    gwr_args_free(a);
    gwr_network_mark_output(net, y);
    gwr_value *v = gwr_value_new(GWR_FLOAT32, 4, (const int64_t[]){1, 1, 2, 6}), *out[2] = {0};
    double xs[12];
    for (int i = 0; i < 12; i++) gwr_value_set_f64(v, i, xs[i] = (double)(i + 1));
    const char *names[1] = {"x"};
    if (CHECK_EQ_INT(run_net(net, 1, names, &v, out), 1))
        for (int s = 0; s < 2; s++)
            for (int j = 0; j < 6; j++) {
                const double *r = xs + s * 6;
                int i = j / 2;
                double c = cv[s * 2 + (i < 2 ? i : 0)], sn = sv[s * 2 + (i < 2 ? i : 0)];
                double want = j >= 4 ? r[j] : j % 2 == 0 ? c * r[j] - sn * r[j + 1] : sn * r[j - 1] + c * r[j];
                if (!CHECK(fabs(gwr_value_get_f64(out[0], s * 6 + j) - want) < 1e-6)) fprintf(stderr, "  s %d j %d\n", s, j);
            }
    gwr_value_release(out[0]);
    gwr_value_release(v);
    gwr_network_free(net);
}

int main(void) {
    RUN(rotary_fires);
    RUN(rotary_gwr_opset18_runs);
    RUN(rotary_must_not_fire);
    RUN(rotary_partial);
    RUN(rotary_cached_tables);
    RUN(ms_kernel_offset_form);
    RUN(rotary_for_ort);
    RUN(rotary_interleaved);
    RUN(rotary_interleaved_must_not_fire);
    RUN(kernel_interleaved);
    return check_report();
}
