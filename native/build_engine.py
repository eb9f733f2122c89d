"""cffi build script (API / out-of-line mode) for ember's native core, `ember.engine._native`.

The module is built from the components below, each a header (its whole C API) and a source
file; docs/engine.md ("The native module") says what each is for.  A component that pushes
engine ops uses engine.h only, like any other C client of the engine:

- engine:      the dependency engine (engine.h);
- collectives: the collective queue the distributed kvstore runs on (collectives.h);
- host_copy:   host copies as engine ops, for kvstore pulls (host_copy.h);
- engine_bench: benchmark-only helpers (an empty op, a C-side push loop: engine_bench.h).

Python code reaches the components through `ember.engine.native`, not through this module.
"""
import os
import re

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
COMPONENTS = ("engine", "collectives", "host_copy", "engine_bench")


def cdef_from_header(path: str) -> str:
    """A header as cffi's cdef: comments, includes and guards dropped, constants as `#define X ...`."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    lines = []
    for line in text.splitlines():
        if line.startswith("#define "):
            name = line.split()[1]
            if not name.endswith("_H"):
                lines.append(f"#define {name} ...")
        elif not line.startswith("#"):
            lines.append(line)
    return "\n".join(lines)


# Python callbacks the C core calls (a Python op, a batch of them, a Python policy's key, the
# collective queue's failure check).
PYTHON_CALLBACKS = """
extern "Python" int ember_py_run(intptr_t id, ember_opr *op);
extern "Python" int ember_py_run_batch(intptr_t *ids, ember_opr **ops, int n, int *errs);
extern "Python" int64_t ember_py_policy_key(const char *name, int priority, uint64_t seq, int dependants, int queue);
extern "Python" int ember_py_coll_check(void *ctx, const char *name, int why, int code);
"""

# The binding's glue (not part of the engine's C API): a Python op is the op body ember_py_op with
# its handle (an integer key of ember.engine.core's op table) as context, pushed by ember_py_push
# without a pointer cast in Python; batches hand Python the handles as integers, errors zeroed.
GLUE_DECLS = """
int ember_py_op(void *ctx, ember_opr *op);
int ember_py_batch(void **ctxs, ember_opr **ops, int n, int *errs);
int ember_py_push(ember_engine *e, intptr_t id, ember_var *const *vars, int nread, int nwrite,
                  const ember_op_attrs *attrs);
"""
GLUE = """
static int ember_py_run(intptr_t id, ember_opr *op);
static int ember_py_run_batch(intptr_t *ids, ember_opr **ops, int n, int *errs);
int ember_py_op(void *ctx, ember_opr *op) { return ember_py_run((intptr_t)ctx, op); }
int ember_py_batch(void **ctxs, ember_opr **ops, int n, int *errs) {
    intptr_t ids[64];
    for (int done = 0; done < n; done += 64) {
        int m = n - done < 64 ? n - done : 64;
        for (int i = 0; i < m; i++) { ids[i] = (intptr_t)ctxs[done + i]; errs[done + i] = 0; }
        ember_py_run_batch(ids, ops + done, m, errs + done);
    }
    return 0;
}
int ember_py_push(ember_engine *e, intptr_t id, ember_var *const *vars, int nread, int nwrite,
                  const ember_op_attrs *attrs) {
    return ember_push(e, ember_py_op, (void *)id, vars, nread, nwrite, attrs);
}
"""

CDEF = "".join(cdef_from_header(os.path.join(HERE, f"{c}.h")) for c in COMPONENTS) + PYTHON_CALLBACKS + GLUE_DECLS

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "ember.engine._native",
    "".join(f'#include "{c}.h"\n' for c in COMPONENTS) + GLUE,
    sources=[os.path.relpath(os.path.join(HERE, f"{c}.c")) for c in COMPONENTS],
    include_dirs=[os.path.relpath(HERE)],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
    libraries=["pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
