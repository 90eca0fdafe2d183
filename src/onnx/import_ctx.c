/* import_ctx.c - the bottom of the ONNX importer: the first failure and
 * its context on the import's context, and giving the model's consumed
 * pages back. import.c, import_wire.c and import_tensor.c build on it. */
#define _DEFAULT_SOURCE /* madvise */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "onnx/onnx_import.h"

gwr_status gwr_oi_fail(gwr_oi_ctx *c, gwr_status s, const char *fmt, ...) {
    if (c->st) return c->st; /* the first problem is the one reported */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->st = s ? s : GWR_ERR_PARSE;
    return c->st;
}

void gwr_oi_wrap(gwr_oi_ctx *c, const char *fmt, ...) {
    char pre[GWR_ERRMSG_MAX], tmp[2 * GWR_ERRMSG_MAX + 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    snprintf(tmp, sizeof tmp, "%s: %s", pre, c->err);
    memcpy(c->err, tmp, sizeof c->err - 1);
    c->err[sizeof c->err - 1] = 0;
}

void gwr_oi_drop_consumed(gwr_oi_ctx *c, size_t upto) {
    if (!c->drop_pages) return;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t end = upto / pg * pg;
    if (end > c->dropped) {
        (void)madvise((char *)(uintptr_t)c->data + c->dropped, end - c->dropped, MADV_DONTNEED);
        c->dropped = end;
    }
}
