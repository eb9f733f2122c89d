/* Benchmark-only helpers of the native core (bench/engine_*.py), kept out of engine.h. */
#ifndef EMBER_ENGINE_BENCH_H
#define EMBER_ENGINE_BENCH_H

#include "engine.h"

/* An empty op. */
int ember_noop(void *ctx, ember_opr *op);
/* Pushes n empty ops from C (one variable written each: round-robin over nvars, or all on the
 * first when chain), waits for all; returns ns per op.  in_caller: each op is first offered to
 * ember_claim and run by this thread when it may start now. */
double ember_bench_native(ember_engine *e, int n, int nvars, int chain, int in_caller);

#endif
