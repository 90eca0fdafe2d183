/* test_onnx_badinput.c - the ONNX importer on bad input, without libFuzzer:
 * every file of tests/fuzz/corpus/ and tests/fuzz/crashes/ goes through the
 * fuzz target's sequence (tests/fuzz/fuzz_onnx_check.h), then truncations,
 * byte flips and wrong wire types of small models. The contract: no crash
 * (the ASan build catches memory errors), and either a network that
 * verifies, saves and loads again, or NULL with a one-line message naming
 * the input. Corpus names say more (tests/fuzz/make_seeds.py): td_* and
 * ok_* must load, bad_* must be refused; those that load, and every crash
 * file, must also round-trip exactly (fuzz_onnx_check.h's compare mode). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fuzz/fuzz_onnx_check.h"

#ifndef GWR_SOURCE_DIR
#error "GWR_SOURCE_DIR must be defined (tests/CMakeLists.txt)"
#endif

#define CORPUS GWR_SOURCE_DIR "/tests/fuzz/corpus"
#define CRASHES GWR_SOURCE_DIR "/tests/fuzz/crashes"

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            unsigned char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    *size = n;
    return buf ? buf : malloc(1);
}

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The regular files of dir, sorted, README* left out; NULL-terminated. */
static char **list_dir(const char *dir, size_t *count) {
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t n = 0;
    *count = 0;
    if (!d) return NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || starts(e->d_name, "README")) continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        char **p = realloc(names, (n + 2) * sizeof *names);
        if (!p) break;
        names = p;
        names[n++] = strdup(e->d_name);
        names[n] = NULL;
    }
    closedir(d);
    if (names) qsort(names, n, sizeof *names, cmp_names);
    *count = n;
    return names;
}

static void free_list(char **names) {
    for (size_t i = 0; names && names[i]; i++) free(names[i]);
    free(names);
}

/* One input through the contract; the failure line names `what`. */
static int run_one(const unsigned char *data, size_t size, const char *name, int compare, const char *what,
                   int *loaded) {
    char why[1024];
    int bad = fuzz_onnx_check(data, size, name, compare, why, sizeof why, loaded);
    if (!CHECK(!bad)) fprintf(stderr, "    %s: %s\n", what, why);
    return !bad;
}

static void check_dir(const char *dir, int named_rules) {
    size_t n;
    char **names = list_dir(dir, &n);
    if (named_rules && !CHECK(n > 0)) fprintf(stderr, "    no files in %s\n", dir);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t size = 0;
        unsigned char *data = read_file(path, &size);
        if (!CHECK(data != NULL)) {
            fprintf(stderr, "    cannot read %s\n", path);
            continue;
        }
        const char *nm = names[i];
        int must_load = named_rules && (starts(nm, "td_") || starts(nm, "ok_"));
        int must_fail = named_rules && starts(nm, "bad_");
        int loaded = 0;
        /* Valid models, and the fuzzer's finds (some come from its compare
         * mode), also promise an exact round trip. */
        if (run_one(data, size, nm, must_load || !named_rules, path, &loaded)) {
            if (must_load && !CHECK(loaded)) fprintf(stderr, "    %s: refused: %s\n", nm, gwr_last_errmsg());
            if (must_fail && !CHECK(!loaded)) fprintf(stderr, "    %s: loaded, but is malformed\n", nm);
            if (!loaded && !CHECK(strstr(gwr_last_errmsg(), nm) != NULL))
                fprintf(stderr, "    %s: the message does not name the input: %s\n", nm, gwr_last_errmsg());
        }
        free(data);
    }
    free_list(names);
}

TEST(corpus_files) { check_dir(CORPUS, 1); }

TEST(crash_files) { check_dir(CRASHES, 0); }

/* External data that points outside the model's folder is refused when
 * loading from a path (base_dir is the corpus folder), and from memory
 * without a base_dir. */
TEST(external_data_escapes) {
    static const char *const files[] = {"bad_external_escape.onnx", "bad_external_absolute.onnx",
                                        "bad_external_no_location.onnx"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", CORPUS, files[i]);
        gwr_network *net = gwr_onnx_load(path, NULL);
        if (!CHECK(net == NULL)) {
            fprintf(stderr, "    %s loaded\n", files[i]);
            gwr_network_free(net);
            continue;
        }
        CHECK(fuzz_msg_ok(gwr_last_errmsg()));
        CHECK_CONTAINS(gwr_last_errmsg(), files[i]);
    }
}

/* The small models the mutations start from. */
static unsigned char *seed(const char *name, size_t *size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", CORPUS, name);
    unsigned char *d = read_file(path, size);
    if (!CHECK(d != NULL)) fprintf(stderr, "    cannot read %s\n", path);
    return d;
}

static const char *const mutation_seeds[] = {"td_node_add.onnx", "td_node_if.onnx", "ok_rich.onnx"};
#define NSEEDS (sizeof mutation_seeds / sizeof *mutation_seeds)

/* Every proper prefix of the model. */
TEST(truncations) {
    for (size_t s = 0; s < NSEEDS; s++) {
        size_t size;
        unsigned char *d = seed(mutation_seeds[s], &size);
        if (!d) continue;
        int failures = 0;
        for (size_t len = 0; len < size && failures < 5; len++) {
            char what[128];
            snprintf(what, sizeof what, "%s cut to %zu bytes", mutation_seeds[s], len);
            unsigned char *copy = malloc(len ? len : 1); /* exact size: ASan sees any over-read */
            memcpy(copy, d, len);
            failures += !run_one(copy, len, "truncated", 0, what, NULL);
            free(copy);
        }
        free(d);
    }
}

/* Each byte replaced by itself xor 0x01, 0x80 and 0xff. */
TEST(byte_flips) {
    static const unsigned char masks[] = {0x01, 0x80, 0xff};
    for (size_t s = 0; s < NSEEDS; s++) {
        size_t size;
        unsigned char *d = seed(mutation_seeds[s], &size);
        if (!d) continue;
        int failures = 0;
        for (size_t pos = 0; pos < size && failures < 5; pos++)
            for (size_t m = 0; m < sizeof masks; m++) {
                char what[128];
                snprintf(what, sizeof what, "%s with byte %zu ^ 0x%02x", mutation_seeds[s], pos, masks[m]);
                d[pos] ^= masks[m];
                failures += !run_one(d, size, "flipped", 0, what, NULL);
                d[pos] ^= masks[m];
            }
        free(d);
    }
}

/* Each byte's low three bits (a field key's wire type, wherever a key
 * sits) set to every other value 0..7: varints read as lengths, lengths as
 * fixed64, groups, the reserved types 6 and 7. */
TEST(wire_types) {
    for (size_t s = 0; s < NSEEDS; s++) {
        size_t size;
        unsigned char *d = seed(mutation_seeds[s], &size);
        if (!d) continue;
        int failures = 0;
        for (size_t pos = 0; pos < size && failures < 5; pos++) {
            unsigned char orig = d[pos];
            for (unsigned w = 0; w < 8; w++) {
                if ((orig & 7u) == w) continue;
                char what[128];
                snprintf(what, sizeof what, "%s with wire type %u at byte %zu", mutation_seeds[s], w, pos);
                d[pos] = (unsigned char)((orig & ~7u) | w);
                failures += !run_one(d, size, "wiretype", 0, what, NULL);
            }
            d[pos] = orig;
        }
        free(d);
    }
}

/* Hand-made wire-level oddities that no seed file holds. */
TEST(handmade_bytes) {
    static const struct {
        const char *what;
        unsigned char bytes[16];
        size_t len;
    } cases[] = {
        {"a lone key with no value", {0x08}, 1},
        {"field number 0", {0x00, 0x01}, 2},
        {"a start-group key", {0x0b, 0x0c}, 2},
        {"an end-group key alone", {0x0c}, 1},
        {"wire type 6", {0x0e, 0x01}, 2},
        {"wire type 7", {0x0f, 0x01}, 2},
        {"graph as fixed32", {0x3d, 1, 2, 3, 4}, 5},
        {"graph as fixed64, cut", {0x39, 1, 2, 3}, 4},
        {"graph of length 2^63", {0x3a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 11},
        {"ir_version of 10 bytes", {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 11},
        {"empty graph node", {0x3a, 0x02, 0x0a, 0x00}, 4},
        {"node with an empty attribute", {0x3a, 0x04, 0x0a, 0x02, 0x2a, 0x00}, 6},
        {"field number 2^29-1", {0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01}, 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        unsigned char *copy = malloc(cases[i].len);
        memcpy(copy, cases[i].bytes, cases[i].len);
        run_one(copy, cases[i].len, "handmade", 0, cases[i].what, NULL);
        free(copy);
    }
    /* NULL data and size 0. */
    gwr_network *net = gwr_onnx_load_memory(NULL, 0, NULL, "null", NULL);
    if (net) CHECK_OK(gwr_network_verify(net));
    else CHECK(fuzz_msg_ok(gwr_last_errmsg()));
    gwr_network_free(net);
}

/* gwr_last_status tells a file that cannot be read from one that is not
 * a model (the loader returns NULL, not a status). */
TEST(load_status) {
    char path[4096];
    snprintf(path, sizeof path, "%s/no_such_model.onnx", CORPUS);
    CHECK(gwr_onnx_load(path, NULL) == NULL);
    CHECK_EQ_INT(gwr_last_status(), GWR_ERR_IO);
    CHECK(gwr_onnx_load(CORPUS, NULL) == NULL); /* a directory */
    CHECK_EQ_INT(gwr_last_status(), GWR_ERR_IO);
    size_t size;
    unsigned char *d = seed("td_node_add.onnx", &size);
    if (!d) return;
    CHECK(gwr_onnx_load_memory(d, size / 2, NULL, "half.onnx", NULL) == NULL);
    CHECK_EQ_INT(gwr_last_status(), GWR_ERR_PARSE);
    free(d);
}

int main(void) {
    RUN(corpus_files);
    RUN(crash_files);
    RUN(external_data_escapes);
    RUN(truncations);
    RUN(byte_flips);
    RUN(wire_types);
    RUN(handmade_bytes);
    RUN(load_status);
    return check_report();
}
