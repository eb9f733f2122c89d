/* Host copies as engine ops (see host_copy.h). */
#include "host_copy.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const void *src;
    void *dst;
    size_t nbytes;
} host_copy;

static atomic_int_fast64_t copies_done;

static int run_host_copy(void *ctx, ember_opr *op) {
    host_copy *c = ctx;
    if (!ember_op_input_failed(op)) memcpy(c->dst, c->src, c->nbytes);
    free(c);
    atomic_fetch_add(&copies_done, 1);
    return 0; /* a failed input's error stays on the output */
}

int ember_push_host_copy(ember_engine *e, const void *src, void *dst, int64_t nbytes, ember_var *src_var,
                         ember_var *dst_var, int priority, const char *name) {
    if (!e || !src || !dst || nbytes < 0 || !src_var || !dst_var || src_var == dst_var) return -100;
    host_copy *c = malloc(sizeof *c);
    if (!c) abort();
    c->src = src;
    c->dst = dst;
    c->nbytes = (size_t)nbytes;
    ember_var *vars[2] = {src_var, dst_var};
    const ember_op_attrs attrs = {0, priority, EMBER_PROP_ASYNC, EMBER_ON_ERROR, name, 0};
    int rc = ember_push(e, run_host_copy, c, vars, 1, 1, &attrs);
    if (rc < 0) free(c);
    return rc < 0 ? rc : 0;
}

int64_t ember_host_copies_done(void) { return atomic_load(&copies_done); }
