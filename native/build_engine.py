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


# Python callbacks the C core calls (the op trampoline, the batch runner, a Python policy's key,
# the collective queue's failure check).
PYTHON_CALLBACKS = """
extern "Python" int ember_py_trampoline(void *ctx, ember_opr *op);
extern "Python" int ember_py_batch(void **ctxs, ember_opr **ops, int n, int *errs);
extern "Python" int64_t ember_py_policy_key(const char *name, int priority, uint64_t seq, int dependants, int queue);
extern "Python" int ember_py_coll_check(void *ctx, const char *name, int why, int code);
"""

CDEF = "".join(cdef_from_header(os.path.join(HERE, f"{c}.h")) for c in COMPONENTS) + PYTHON_CALLBACKS

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "ember.engine._native",
    "".join(f'#include "{c}.h"\n' for c in COMPONENTS),
    sources=[os.path.relpath(os.path.join(HERE, f"{c}.c")) for c in COMPONENTS],
    include_dirs=[os.path.relpath(HERE)],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
    libraries=["pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
