/* numpy ufunc inner loops run back to back in one call: ufunc_loops.h. */
#include "ufunc_loops.h"

#include <fenv.h>

void ember_run_ufunc_loops(const ember_ufunc_loop *loops, int count) {
    for (int i = 0; i < count; i++) {
        const ember_ufunc_loop *l = &loops[i];
        char *args[3] = {l->args[0], l->args[1], l->args[2]}; /* a loop may advance its copy */
        l->fn(args, &l->n, l->steps, l->data);
    }
    feclearexcept(FE_ALL_EXCEPT);
}
