/* numpy ufunc inner loops run back to back in one call.
 *
 * A run of small elementwise nodes in a bound graph costs numpy's per-call dispatch (argument
 * parsing, type resolution, iterator set-up: ~0.3 us) for each node, ten times the work of a
 * (16, 16) float32 kernel.  An executor looks each such node's inner loop up once at bind (the
 * function numpy itself calls for those dtypes: the same results, bit for bit) and runs a run of
 * them here in one call.
 *
 * A loop is numpy's legacy inner-loop signature, void fn(char **args, const npy_intp *dims,
 * const npy_intp *steps, void *data), over one dimension of `n` elements: args[i] the first
 * element of operand i (inputs then the output), steps[i] its stride in bytes (0: a scalar).
 */
#ifndef EMBER_UFUNC_LOOPS_H
#define EMBER_UFUNC_LOOPS_H

#include <stdint.h>

typedef struct {
    void (*fn)(char **args, const intptr_t *dims, const intptr_t *steps, void *data);
    void *data;        /* the loop's own data pointer (numpy's ufunc->data[i]) */
    char *args[3];     /* operands: one or two inputs, then the output */
    intptr_t n;        /* elements */
    intptr_t steps[3]; /* strides in bytes */
} ember_ufunc_loop;

/* Run loops[0..count) in order, then clear the floating-point status flags they raised (numpy
 * reports those as warnings; MXNet's kernels do not). */
void ember_run_ufunc_loops(const ember_ufunc_loop *loops, int count);

#endif
