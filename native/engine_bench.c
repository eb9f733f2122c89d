/* Benchmark-only helpers (see engine_bench.h). */
#include "engine_bench.h"

#include <stdlib.h>

int ember_noop(void *ctx, ember_opr *op) {
    (void)ctx;
    (void)op;
    return 0;
}

double ember_bench_native(ember_engine *e, int n, int nvars, int chain, int in_caller) {
    if (nvars < 1) nvars = 1;
    ember_var **vars = malloc((size_t)nvars * sizeof *vars);
    if (!vars) abort();
    for (int i = 0; i < nvars; i++) vars[i] = ember_var_new(e);
    const ember_op_attrs attrs = {0, 0, EMBER_PROP_NORMAL, 0, "noop", 0};
    int64_t t0 = ember_now_ns();
    for (int i = 0; i < n; i++) {
        ember_var *w = vars[chain ? 0 : i % nvars];
        ember_opr *op = in_caller ? ember_claim(e, &w, 0, 1, &attrs) : NULL;
        if (op) ember_complete(op, ember_noop(NULL, op));
        else ember_push(e, ember_noop, NULL, &w, 0, 1, &attrs);
    }
    ember_wait_all(e, -1);
    int64_t t1 = ember_now_ns();
    for (int i = 0; i < nvars; i++) ember_var_delete(e, vars[i]);
    ember_wait_all(e, -1);
    free(vars);
    return (double)(t1 - t0) / n;
}
