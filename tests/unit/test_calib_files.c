/* test_calib_files.c - gwr_calib_load (src/quant/calib_files.c): .npz
 * files built here byte by byte (zip local headers, central directory, end
 * record; .npy headers of versions 1 to 3; CRC-32 computed by the bitwise
 * definition below, deflate by zlib), ONNX test-data directories of
 * TensorProto files, and each refusal a one-line message naming the file.
 * python/tests/test_quantize.py and tests/cli/test_quantize_cli.sh load
 * what numpy.savez / savez_compressed and onnx.numpy_helper write. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "gwr/gwr.h"

/* ---- building files ----------------------------------------------------------- */

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void put16(buf *b, unsigned v) {
    unsigned char c[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    put(b, c, 2);
}
static void put32(buf *b, uint32_t v) {
    put16(b, v & 0xffff);
    put16(b, v >> 16);
}

/* CRC-32 (ISO-HDLC, reflected 0xEDB88320), bit by bit. */
static uint32_t crc32_bits(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return ~c;
}

/* A .npy file: version `ver`, header dict text `dict`, then n data bytes. */
static buf npy(int ver, const char *dict, const void *data, size_t n) {
    buf b = {0};
    size_t pre = ver == 1 ? 10 : 12, hl = strlen(dict) + 1;
    while ((pre + hl) % 64) hl++;
    put(&b, "\x93NUMPY", 6);
    unsigned char v[2] = {(unsigned char)ver, 0};
    put(&b, v, 2);
    if (ver == 1) put16(&b, (unsigned)hl);
    else put32(&b, (uint32_t)hl);
    put(&b, dict, strlen(dict));
    for (size_t i = strlen(dict); i < hl - 1; i++) put(&b, " ", 1);
    put(&b, "\n", 1);
    put(&b, data, n);
    return b;
}

/* A zip of members (name, bytes), stored or deflated (raw deflate by zlib). */
typedef struct member {
    const char *name;
    buf data;
} member;

static buf zip(member *m, int n, int deflated) {
    buf z = {0}, cd = {0};
    for (int i = 0; i < n; i++) {
        uint32_t crc = crc32_bits(m[i].data.p, m[i].data.n), off = (uint32_t)z.n;
        buf body = m[i].data;
        unsigned char *packed = NULL;
        if (deflated) {
            uLong cap = compressBound((uLong)body.n) + 64;
            packed = malloc(cap);
            z_stream s;
            memset(&s, 0, sizeof s);
            deflateInit2(&s, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
            s.next_in = body.p, s.avail_in = (uInt)body.n, s.next_out = packed, s.avail_out = (uInt)cap;
            deflate(&s, Z_FINISH);
            body.p = packed, body.n = s.total_out;
            deflateEnd(&s);
        }
        size_t nl = strlen(m[i].name);
        put32(&z, 0x04034b50), put16(&z, 20), put16(&z, 0), put16(&z, deflated ? 8 : 0), put16(&z, 0), put16(&z, 0x21);
        put32(&z, crc), put32(&z, (uint32_t)body.n), put32(&z, (uint32_t)m[i].data.n);
        put16(&z, (unsigned)nl), put16(&z, 0), put(&z, m[i].name, nl), put(&z, body.p, body.n);
        put32(&cd, 0x02014b50), put16(&cd, 20), put16(&cd, 20), put16(&cd, 0), put16(&cd, deflated ? 8 : 0);
        put16(&cd, 0), put16(&cd, 0x21), put32(&cd, crc), put32(&cd, (uint32_t)body.n), put32(&cd, (uint32_t)m[i].data.n);
        put16(&cd, (unsigned)nl), put16(&cd, 0), put16(&cd, 0), put16(&cd, 0), put16(&cd, 0), put32(&cd, 0);
        put32(&cd, off), put(&cd, m[i].name, nl);
        free(packed);
        free(m[i].data.p);
    }
    uint32_t cdoff = (uint32_t)z.n;
    put(&z, cd.p, cd.n);
    put32(&z, 0x06054b50), put16(&z, 0), put16(&z, 0), put16(&z, (unsigned)n), put16(&z, (unsigned)n);
    put32(&z, (uint32_t)cd.n), put32(&z, cdoff), put16(&z, 0);
    free(cd.p);
    return z;
}

static char dir[256];

static void write_file(const char *name, const void *p, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) fwrite(p, 1, n, f), fclose(f);
}

static void write_buf(const char *name, buf b) {
    write_file(name, b.p, b.n);
    free(b.p);
}

static void fresh_dir(void) {
    char cmd[300];
    if (dir[0]) snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir), (void)!system(cmd);
    snprintf(dir, sizeof dir, "/tmp/gwr_calib_XXXXXX");
    if (!mkdtemp(dir)) dir[0] = 0;
}

/* x float32 [2, 3], ids int64 [1, N], w float32 [3] with a default. */
static gwr_network *model(void) {
    gwr_network *net = gwr_network_new("m");
    gwr_dim dx[2] = {2, 3}, di[2] = {1, gwr_network_dim_sym(net, "N")}, dw[1] = {3};
    gwr_network_add_input(net, "x", GWR_FLOAT32, 2, dx);
    gwr_tensor *w = gwr_network_add_input(net, "w", GWR_FLOAT32, 1, dw);
    gwr_network_add_input(net, "ids", GWR_INT64, 2, di);
    static const float wv[3] = {1, 2, 3};
    int64_t d3 = 3;
    gwr_weights ww = {.dtype = GWR_FLOAT32, .rank = 1, .dims = &d3, .data = wv, .nbytes = sizeof wv};
    gwr_tensor_set_default(w, &ww);
    return net;
}

static const float X[6] = {0.5f, -1, 2, 3.25f, -4, 1e-3f};
static const int64_t IDS[4] = {7, -1, 1LL << 40, 0};

static member x_member(int ver) {
    return (member){"x.npy", npy(ver, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", X, sizeof X)};
}
static member ids_member(void) {
    return (member){"ids.npy", npy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 4), }", IDS, sizeof IDS)};
}

static member *d_again(void) {
    static member m[1];
    m[0] = x_member(1);
    return m;
}

static int value_is(const gwr_calib *c, int i, const char *name, gwr_dtype dt, const void *data, size_t n) {
    const char *const *names;
    gwr_value *const *vals;
    int k = gwr_calib_sample(c, i, &names, &vals);
    for (int j = 0; j < k; j++)
        if (!strcmp(names[j], name))
            return gwr_value_dtype(vals[j]) == dt && gwr_value_nbytes(vals[j]) == n &&
                   (!n || !memcmp(gwr_value_cdata(vals[j]), data, n));
    return 0;
}

/* Loads dir: NULL expected, with msg holding `want` and naming `file`. */
static void refused(gwr_network *net, const char *file, const char *want) {
    gwr_calib *c = gwr_calib_load(dir, net);
    CHECK(c == NULL);
    gwr_calib_free(c);
    const char *msg = gwr_last_errmsg();
    CHECK_CONTAINS(msg, want);
    if (file) CHECK_CONTAINS(msg, file);
    CHECK(!strchr(msg, '\n'));
}

/* ---- tests ---------------------------------------------------------------------- */

TEST(npz_stored_and_deflated) {
    gwr_network *net = model();
    fresh_dir();
    member a[2] = {x_member(1), ids_member()}, b[2] = {ids_member(), x_member(2)};
    write_buf("s10.npz", zip(a, 2, 0));
    write_buf("s2.npz", zip(b, 2, 1));
    write_file("README.txt", "not a sample", 12); /* other files are ignored */
    gwr_calib *c = gwr_calib_load(dir, net);
    if (CHECK(c != NULL) && CHECK_EQ_INT(gwr_calib_count(c), 2)) {
        CHECK(value_is(c, 0, "x", GWR_FLOAT32, X, sizeof X));
        CHECK(value_is(c, 0, "ids", GWR_INT64, IDS, sizeof IDS));
        CHECK(value_is(c, 1, "x", GWR_FLOAT32, X, sizeof X));
        CHECK(gwr_calib_fits(c, net, NULL, 0));
        /* s2 before s10: sample 0 is the deflated one, whose first member is ids */
        const char *const *names;
        gwr_calib_sample(c, 0, &names, NULL);
        CHECK_STR(names[0], "ids");
    } else {
        fprintf(stderr, "  %s\n", gwr_last_errmsg());
    }
    gwr_calib_free(c);
    gwr_network_free(net);
}

TEST(npy_versions_scalars_bool) {
    gwr_network *net = gwr_network_new("m");
    gwr_network_add_input(net, "s", GWR_FLOAT64, 0, NULL);
    gwr_dim d2[1] = {2}, d0[1] = {0};
    gwr_network_add_input(net, "b", GWR_BOOL, 1, d2);
    gwr_network_add_input(net, "e", GWR_FLOAT16, 1, d0);
    gwr_network_add_input(net, "i8", GWR_INT8, 1, d2);
    fresh_dir();
    double s = -2.5;
    unsigned char bb[2] = {1, 0};
    signed char i8[2] = {-128, 127};
    member m[4] = {{"s.npy", npy(3, "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": ()}", &s, sizeof s)},
                   {"b.npy", npy(2, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", bb, 2)},
                   {"e.npy", npy(1, "{'descr': '<f2', 'fortran_order': True, 'shape': (0,), }", NULL, 0)},
                   {"i8.npy", npy(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", i8, 2)}};
    write_buf("one.npz", zip(m, 4, 0));
    gwr_calib *c = gwr_calib_load(dir, net);
    if (CHECK(c != NULL)) {
        CHECK(value_is(c, 0, "s", GWR_FLOAT64, &s, sizeof s));
        CHECK(value_is(c, 0, "b", GWR_BOOL, bb, 2));
        CHECK(value_is(c, 0, "e", GWR_FLOAT16, NULL, 0));
        CHECK(value_is(c, 0, "i8", GWR_INT8, i8, 2));
    } else {
        fprintf(stderr, "  %s\n", gwr_last_errmsg());
    }
    gwr_calib_free(c);
    gwr_network_free(net);
}

/* One .npz s1.npz of the given members, then loaded: refused with want. */
static void bad_npz(gwr_network *net, member *m, int n, const char *want) {
    fresh_dir();
    write_buf("s1.npz", zip(m, n, 0));
    refused(net, "s1.npz", want);
}

TEST(npz_refusals) {
    gwr_network *net = model();
    static const int32_t X32[6] = {0};
    member m[2];
    m[0] = (member){"x.npy", npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", X32, sizeof X32)};
    m[1] = ids_member();
    bad_npz(net, m, 2, "input 'x' is int32, the model takes float32");
    m[0] = (member){"x.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", X, sizeof X)};
    m[1] = ids_member();
    bad_npz(net, m, 2, "input 'x' is float32[3,2], the model takes float32[2,3]");
    m[0] = x_member(1);
    m[1] = (member){"foo.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", X, sizeof X)};
    bad_npz(net, m, 2, "no input named 'foo' in the model");
    m[0] = x_member(1);
    bad_npz(net, m, 1, "input 'ids' is missing");
    m[0] = x_member(1), m[1] = x_member(2);
    bad_npz(net, m, 2, "input 'x' given twice");
    m[0] = (member){"x.npy", npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", X, sizeof X)};
    bad_npz(net, m, 1, "Fortran-order");
    m[0] = (member){"x.npy", npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", X, sizeof X)};
    bad_npz(net, m, 1, "dtype '>f4' is not supported");
    m[0] = (member){"x.npy", npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", X, 8)};
    bad_npz(net, m, 1, "structured dtype");
    m[0] = (member){"x.npy", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", X, sizeof X - 4)};
    bad_npz(net, m, 1, "truncated data");
    m[0] = (member){"x.npy", npy(1, "{'descr': '<f4', 'shape': (2, 3), }", X, sizeof X)};
    bad_npz(net, m, 1, "without descr, fortran_order or shape");
    m[0] = (member){"x.npy", npy(4, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", X, sizeof X)};
    bad_npz(net, m, 1, "version 4");
    m[0] = (member){"x.txt", npy(1, "{}", NULL, 0)};
    bad_npz(net, m, 1, "member 'x.txt' is not a .npy array");

    /* damaged files */
    member a[2] = {x_member(1), ids_member()};
    buf z = zip(a, 2, 0);
    fresh_dir();
    write_file("s1.npz", z.p, z.n / 2);
    refused(net, "s1.npz", "truncated zip");
    z.p[60] ^= 0x55; /* inside the first member's data: its CRC no longer holds */
    fresh_dir();
    write_file("s1.npz", z.p, z.n);
    refused(net, "s1.npz", "fails its CRC check");
    free(z.p);
    member d[1] = {x_member(1)};
    z = zip(d, 1, 1);
    z.p[40] ^= 0xff; /* inside the deflate stream */
    fresh_dir();
    write_file("s1.npz", z.p, z.n);
    refused(net, "s1.npz", "s1.npz: ");
    free(z.p);
    /* a central directory claiming 1 GB from a few bytes of deflate */
    z = zip(d_again(), 1, 1);
    for (size_t i = 0; i + 4 < z.n; i++)
        if (!memcmp(z.p + i, "PK\1\2", 4)) z.p[i + 24 + 3] = 0x40;
    fresh_dir();
    write_file("s1.npz", z.p, z.n);
    refused(net, "s1.npz", "corrupt zip: member 'x.npy' claims 1073741");
    free(z.p);
    /* a version 2 .npy shorter than its own preamble */
    member t[1] = {{"x.npy", {0}}};
    put(&t[0].data, "\x93NUMPY\x02\x00\x10\x00\x00", 11);
    bad_npz(net, t, 1, "truncated .npy header");
    fresh_dir();
    write_file("s1.npz", "PK not really a zip file at all", 31);
    refused(net, "s1.npz", "not a zip file");
    fresh_dir();
    write_file("s1.npz", "", 0);
    refused(net, "s1.npz", "not a zip file");
    gwr_network_free(net);
}

TEST(directory_refusals) {
    gwr_network *net = model();
    fresh_dir();
    refused(net, dir, "no calibration samples (no .npz files and no test-data directories)");
    write_file("notes.txt", "x", 1);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/empty_subdir", dir);
    mkdir(sub, 0700);
    refused(net, dir, "no calibration samples");
    char missing[300];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    CHECK(gwr_calib_load(missing, net) == NULL);
    CHECK_CONTAINS(gwr_last_errmsg(), "nope: cannot open the directory");
    CHECK(gwr_calib_load(NULL, net) == NULL);
    gwr_network_free(net);
}

static void write_pb(const char *sub, const char *file, const char *name, gwr_dtype dt, int rank, int64_t *dims,
                     const void *data, size_t n) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, file);
    gwr_weights w = {.dtype = dt, .rank = rank, .dims = dims, .data = data, .nbytes = n};
    CHECK_OK(gwr_onnx_write_tensor(path, name, &w));
}

TEST(test_data_dirs) {
    gwr_network *net = model();
    fresh_dir();
    int64_t dx[2] = {2, 3}, di[2] = {1, 4};
    /* set 0: both named, in the other order, with an output beside them */
    write_pb("test_data_set_0", "input_0.pb", "ids", GWR_INT64, 2, di, IDS, sizeof IDS);
    write_pb("test_data_set_0", "input_1.pb", "x", GWR_FLOAT32, 2, dx, X, sizeof X);
    write_pb("test_data_set_0", "output_0.pb", "y", GWR_FLOAT32, 2, dx, X, sizeof X);
    /* set 1: unnamed, in the order of the inputs without a default (x, ids) */
    write_pb("test_data_set_1", "input_0.pb", NULL, GWR_FLOAT32, 2, dx, X, sizeof X);
    write_pb("test_data_set_1", "input_1.pb", "", GWR_INT64, 2, di, IDS, sizeof IDS);
    gwr_calib *c = gwr_calib_load(dir, net);
    if (CHECK(c != NULL) && CHECK_EQ_INT(gwr_calib_count(c), 2)) {
        for (int i = 0; i < 2; i++) {
            CHECK(value_is(c, i, "x", GWR_FLOAT32, X, sizeof X));
            CHECK(value_is(c, i, "ids", GWR_INT64, IDS, sizeof IDS));
            CHECK_EQ_INT(gwr_calib_sample(c, i, NULL, NULL), 2);
        }
    } else {
        fprintf(stderr, "  %s\n", gwr_last_errmsg());
    }
    gwr_calib_free(c);

    /* .pb files directly in DIR: one sample */
    fresh_dir();
    write_pb(".", "a.pb", "x", GWR_FLOAT32, 2, dx, X, sizeof X);
    write_pb(".", "b.pb", "ids", GWR_INT64, 2, di, IDS, sizeof IDS);
    c = gwr_calib_load(dir, net);
    if (CHECK(c != NULL)) CHECK_EQ_INT(gwr_calib_count(c), 1);
    gwr_calib_free(c);

    /* refusals name the .pb file */
    fresh_dir();
    write_pb("s", "input_0.pb", "x", GWR_FLOAT64, 2, dx, (double[6]){0}, 48);
    write_pb("s", "input_1.pb", "ids", GWR_INT64, 2, di, IDS, sizeof IDS);
    refused(net, "s/input_0.pb", "input 'x' is float64, the model takes float32");
    fresh_dir();
    write_pb("s", "input_0.pb", "x", GWR_FLOAT32, 2, dx, X, sizeof X);
    refused(net, "/s", "input 'ids' is missing");
    write_pb("s", "input_1.pb", NULL, GWR_INT64, 2, di, IDS, sizeof IDS);
    write_pb("s", "input_2.pb", NULL, GWR_INT64, 2, di, IDS, sizeof IDS);
    refused(net, "s/input_2.pb", "no name, and the model has 2 inputs to take it by place");
    fresh_dir();
    write_pb("s", "input_0.pb", "x", GWR_FLOAT32, 2, dx, X, sizeof X);
    write_file("s/input_1.pb", "\xff\xff\xff", 3);
    refused(net, "s/input_1.pb", "s/input_1.pb: ");
    gwr_network_free(net);
}

int main(void) {
    RUN(npz_stored_and_deflated);
    RUN(npy_versions_scalars_bool);
    RUN(npz_refusals);
    RUN(directory_refusals);
    RUN(test_data_dirs);
    fresh_dir(); /* removes the last one, makes an empty one */
    rmdir(dir);
    return check_report();
}
