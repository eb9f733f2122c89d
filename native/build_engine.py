"""cffi build script (API / out-of-line mode) for ember's native core, `ember.engine._native`:
the engine (engine.h) and the collective queue the distributed kvstore runs on (collectives.h)."""
import os
import re

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))

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

CDEF = ("".join(cdef_from_header(os.path.join(HERE, name)) for name in ("engine.h", "collectives.h", "host_copy.h"))
        + PYTHON_CALLBACKS)

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "ember.engine._native",
    '#include "engine.h"\n#include "collectives.h"\n#include "host_copy.h"',
    sources=[os.path.relpath(os.path.join(HERE, name)) for name in ("engine.c", "collectives.c", "host_copy.c")],
    include_dirs=[os.path.relpath(HERE)],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
    libraries=["pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
