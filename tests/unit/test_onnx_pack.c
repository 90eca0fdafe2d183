/* test_onnx_pack.c - the exporter's back-to-front packer (src/onnx/
 * export_pack.c) against protobuf-c's own packing, byte for byte, on the
 * message trees the exporter builds: every model of the ONNX backend test
 * data (Debian libonnx-testdata), a generated GPT whose weights are packed
 * by reference, and messages with what the packer hands to protobuf-c
 * (unknown fields). Inside the ONNX room: this test alone sees protobuf
 * types (tests/CMakeLists.txt). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gwr/gwr.h"
#include "onnx/onnx_export.h"

static const char *const TD = "/usr/share/libonnx-testdata/data";

/* Packs m both ways; 1 when the bytes agree (and, through a file, too). */
static int same_bytes(const ProtobufCMessage *m, const char *what) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *want = malloc(n ? n : 1), *got = NULL;
    gwr_pb_out w = {0};
    int ok = 0;
    if (!want || !CHECK_OK(gwr_pb_pack(&w, m))) goto out;
    protobuf_c_message_pack(m, want);
    if (!CHECK_EQ_INT((long long)w.total, (long long)n)) goto out;
    if (!(got = malloc(n ? n : 1))) goto out;
    gwr_pb_copy(&w, got);
    if (!CHECK(!memcmp(got, want, n))) {
        size_t i = 0;
        while (i < n && got[i] == want[i]) i++;
        fprintf(stderr, "  %s: first difference at byte %zu of %zu\n", what, i, n);
        goto out;
    }
    ok = 1;
out:
    free(want), free(got);
    gwr_pb_free(&w);
    return ok;
}

static int pack_network(gwr_network *net, const char *what) {
    gwr_ox_ctx c = {0};
    gwr_arena_init(&c.arena);
    Onnx__ModelProto *m;
    int ok = 0;
    if (gwr_ox_build(&c, net, &m)) fprintf(stderr, "  %s: cannot build: %s\n", what, c.err);
    else ok = same_bytes(&m->base, what);
    gwr_ox_free(&c);
    return ok;
}

TEST(backend_models) {
    static const char *const sets[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};
    int models = 0, same = 0;
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", TD, sets[s]);
        DIR *d = opendir(dir);
        if (!CHECK(d)) {
            fprintf(stderr, "  %s: %s (is libonnx-testdata installed?)\n", dir, strerror(errno));
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s/model.onnx", dir, e->d_name);
            if (access(path, R_OK)) continue;
            gwr_network *net = gwr_onnx_load(path, NULL);
            if (!net) continue; /* what the importer refuses is tested elsewhere */
            models++;
            same += pack_network(net, path);
            gwr_network_free(net);
        }
        closedir(d);
    }
    CHECK(models > 1000);
    CHECK_EQ_INT(same, models);
}

/* Weights of 4 KB and more are written by reference: the pieces must come
 * out in file order, through memory and through a file. */
TEST(weights_by_reference) {
    gwr_gpt_config cfg = {.blocks = 3, .hidden = 64, .heads = 4, .seed = 1};
    gwr_network *net = gwr_network_new("gpt");
    gwr_tensor *y = gwr_build_gpt(net, &cfg);
    if (!CHECK(y)) {
        gwr_network_free(net);
        return;
    }
    gwr_ox_ctx c = {0};
    gwr_arena_init(&c.arena);
    Onnx__ModelProto *m;
    if (CHECK_OK(gwr_ox_build(&c, net, &m)) && CHECK(same_bytes(&m->base, "gpt"))) {
        gwr_pb_out w = {0};
        CHECK_OK(gwr_pb_pack(&w, &m->base));
        CHECK(w.nrefs > 3);
        size_t n = protobuf_c_message_get_packed_size(&m->base);
        uint8_t *want = malloc(n), *got = malloc(n + 1);
        char path[] = "/tmp/gwr_pack_XXXXXX";
        int fd = mkstemp(path);
        if (CHECK(want && got && fd >= 0)) {
            protobuf_c_message_pack(&m->base, want);
            CHECK_EQ_INT(gwr_pb_write(&w, fd), 0);
            CHECK_EQ_INT(lseek(fd, 0, SEEK_SET), 0);
            CHECK_EQ_INT((long long)read(fd, got, n + 1), (long long)n);
            CHECK(!memcmp(got, want, n));
        }
        if (fd >= 0) close(fd), unlink(path);
        free(want), free(got);
        /* A write error comes back as the errno. */
        CHECK_EQ_INT(gwr_pb_write(&w, -1), EBADF);
        gwr_pb_free(&w);
    }
    gwr_ox_free(&c);
    gwr_network_free(net);
}

/* Unknown fields (kept by protobuf-c when it unpacks a newer file) are
 * left to protobuf-c, small or large; so are oneof members and negative
 * int32 values, which the packer writes itself. */
TEST(unknown_fields_and_oneofs) {
    Onnx__TypeProto ty = ONNX__TYPE_PROTO__INIT;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1;
    tt.elem_type = -3;
    ty.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    ty.tensor_type = &tt;
    ty.denotation = "TENSOR";
    CHECK(same_bytes(&ty.base, "oneof"));
    static uint8_t small[4] = {1, 2, 3, 4}, big[5000];
    memset(big, 7, sizeof big);
    ProtobufCMessageUnknownField unk[2] = {{.tag = 99, .wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, .len = 3, .data = small},
                                           {.tag = 100, .wire_type = PROTOBUF_C_WIRE_TYPE_32BIT, .len = 4, .data = small}};
    tt.base.n_unknown_fields = 2;
    tt.base.unknown_fields = unk;
    CHECK(same_bytes(&ty.base, "unknown small"));
    Onnx__StringStringEntryProto e = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
    e.key = "k";
    ProtobufCMessageUnknownField ub = {.tag = 7, .wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED,
                                       .len = sizeof big, .data = big};
    e.base.n_unknown_fields = 1;
    e.base.unknown_fields = &ub;
    CHECK(same_bytes(&e.base, "unknown big"));
}

/* onnx.proto's typed tensor data is packed: fixed-width runs and varints
 * (negative int32 as ten bytes), small and past the reference size. */
TEST(packed_fields) {
    static float f[3] = {1.5f, -2, 0};
    static int32_t i32[4] = {-1, 0, 300, INT32_MIN};
    static int64_t i64[3] = {-1, 1LL << 40, 0};
    static double d[2] = {0.25, -1e300};
    static uint64_t u64[2] = {UINT64_MAX, 5};
    static int64_t dims[1] = {3};
    static float bigf[2000];
    Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
    t.n_dims = 1, t.dims = dims;
    t.n_float_data = 3, t.float_data = f;
    t.n_int32_data = 4, t.int32_data = i32;
    t.n_int64_data = 3, t.int64_data = i64;
    t.n_double_data = 2, t.double_data = d;
    t.n_uint64_data = 2, t.uint64_data = u64;
    CHECK(same_bytes(&t.base, "packed"));
    for (int k = 0; k < 2000; k++) bigf[k] = (float)k;
    t.n_float_data = 2000, t.float_data = bigf;
    CHECK(same_bytes(&t.base, "packed big"));
}

int main(void) {
    RUN(backend_models);
    RUN(weights_by_reference);
    RUN(unknown_fields_and_oneofs);
    RUN(packed_fields);
    return check_report();
}
