/* optable.c - the op table expanded from ops.def, with its name tables and
 * an O(1) lookup by (domain, name). */
#include <string.h>
#include <threads.h>

#include "ir/ir_internal.h"

#define VARIADIC_OK(id, max_in, flags) \
    _Static_assert(((max_in) == -1) == (((flags) & GWR_OPF_VARIADIC) != 0), "VARIADIC flag of " #id);
#define GWR_OP(id, name, domain, cls, ew, min_in, max_in, min_out, max_out, flags, since) \
    VARIADIC_OK(id, max_in, flags)
#include "gwr/ops.def"
#undef GWR_OP

static const gwr_op_info op_table[GWR_OP_COUNT] = {
    [GWR_OP_CUSTOM] = {GWR_OP_CUSTOM, "", "", GWR_LAYER_PLUGIN, GWR_EW_NONE, 0, -1, 0, -1,
                       GWR_OPF_VARIADIC, 1},
#define GWR_OP(id, name, domain, cls, ew, min_in, max_in, min_out, max_out, flags, since) \
    [GWR_OP_##id] = {GWR_OP_##id, name, domain, GWR_LAYER_##cls, GWR_EW_##ew, min_in, max_in, \
                     min_out, max_out, flags, since},
#include "gwr/ops.def"
#undef GWR_OP
};

static const char *const class_names[] = {
#define GWR_LAYER_CLASS(id) #id,
#include "gwr/layer_classes.def"
#undef GWR_LAYER_CLASS
};
_Static_assert(sizeof class_names / sizeof *class_names == GWR_LAYER_TYPE_COUNT, "class names");

static const char *const ew_names[] = {
#define GWR_EW_OP(id) #id,
#include "gwr/ew_ops.def"
#undef GWR_EW_OP
};
_Static_assert(sizeof ew_names / sizeof *ew_names == GWR_EW_OP_COUNT, "ew names");

const char *gwr_layer_type_name(gwr_layer_type t) {
    return (unsigned)t < GWR_LAYER_TYPE_COUNT ? class_names[t] : "UNKNOWN";
}

const char *gwr_ew_op_name(gwr_ew_op op) {
    return (unsigned)op < GWR_EW_OP_COUNT ? ew_names[op] : "UNKNOWN";
}

const gwr_op_info *gwr_op_info_get(gwr_op_id id) {
    return id > GWR_OP_CUSTOM && id < GWR_OP_COUNT ? &op_table[id] : NULL;
}

/* The lookup table: a fixed open-addressing hash of "domain\x1fname", built
 * once (call_once), read-only afterwards, so lookups need no lock. */
#define LOOKUP_CAP 1024
_Static_assert(GWR_OP_COUNT * 2 < LOOKUP_CAP, "grow LOOKUP_CAP");
static uint16_t lookup_slots[LOOKUP_CAP];
static once_flag lookup_once = ONCE_FLAG_INIT;

static uint64_t op_hash(const char *domain, const char *name) {
    uint64_t h = gwr_hash_str(domain);
    return (h * 31) ^ gwr_hash_str(name);
}

static void lookup_build(void) {
    for (int id = 1; id < GWR_OP_COUNT; id++) {
        uint64_t j = op_hash(op_table[id].domain, op_table[id].name) & (LOOKUP_CAP - 1);
        while (lookup_slots[j]) j = (j + 1) & (LOOKUP_CAP - 1);
        lookup_slots[j] = (uint16_t)id;
    }
}

gwr_op_id gwr_op_lookup(const char *domain, const char *name) {
    if (!name) return GWR_OP_CUSTOM;
    if (!domain || !strcmp(domain, "ai.onnx")) domain = "";
    call_once(&lookup_once, lookup_build);
    uint64_t j = op_hash(domain, name) & (LOOKUP_CAP - 1);
    while (lookup_slots[j]) {
        const gwr_op_info *e = &op_table[lookup_slots[j]];
        if (!strcmp(e->name, name) && !strcmp(e->domain, domain)) return e->id;
        j = (j + 1) & (LOOKUP_CAP - 1);
    }
    return GWR_OP_CUSTOM;
}
