/* objects.h - what the files of the core objects (network.c, layer.c,
 * tensor.c, guard.c, args.c) share: the structs of Network, Layer and
 * Tensor objects and the pointer table that finds the one object of a
 * handle. Private to those files; the other parts use pygwr.h. */
#ifndef PYGWR_OBJECTS_H
#define PYGWR_OBJECTS_H

#include "pygwr.h"

/* Open addressing with linear probing; deletion shifts back, so there are
 * no tombstones. Values are borrowed: an object removes itself when it
 * dies. */
typedef struct pg_slot {
    const void *key;
    PyObject *val;
} pg_slot;
typedef struct pg_map {
    pg_slot *v;
    size_t cap, n; /* cap a power of two, or 0 */
} pg_map;

PyObject *pg_map_get(const pg_map *m, const void *k);
int pg_map_put(pg_map *m, const void *k, PyObject *val); /* -1 with MemoryError */
void pg_map_del(pg_map *m, const void *k);
void pg_map_free(pg_map *m);

struct pg_network {
    PyObject_HEAD
    gwr_network *net; /* NULL once closed */
    int listener;     /* id, or -1 */
    int busy;         /* managers and sessions running on it */
    uint64_t generation;
    pg_map objs;      /* gwr_layer* / gwr_tensor* -> its Layer / Tensor object */
    PyObject *weakrefs;
};

/* Why a Layer or Tensor object no longer has a handle. */
enum { PG_ALIVE = 0, PG_CLOSED, PG_PRUNED };

typedef struct pg_layer_obj {
    PyObject_HEAD
    pg_network *owner; /* strong */
    gwr_layer *l;      /* NULL when dead */
    int dead;
    char *name;        /* kept for messages once dead */
} pg_layer_obj;

typedef struct pg_tensor_obj {
    PyObject_HEAD
    pg_network *owner;
    gwr_tensor *t;
    int dead;
    char *name;
} pg_tensor_obj;

extern PyTypeObject pg_Guard_Type;

/* Why a dead object died, for messages. */
const char *pg_why_dead(int dead);
/* 0, or -1 with TypeError (not a Network) / LifetimeError (closed). */
int pg_network_check(PyObject *o);

/* Adds current_network() (guard.c); pg_init_core readies the types. */
int pg_init_guard(PyObject *m);

#endif
