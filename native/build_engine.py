"""cffi build script (API / out-of-line mode) for ember's native core, `ember.engine._native`.

The module is built from the components below, each a header (its whole C API) and a source
file; docs/engine.md ("The native module") says what each is for.  A component that pushes
engine ops uses engine.h only, like any other C client of the engine:

- engine:      the dependency engine (engine.h);
- collectives: the collective queue the distributed kvstore runs on (collectives.h);
- host_copy:   host copies as engine ops, for kvstore pulls (host_copy.h);
- ufunc_loops: numpy ufunc inner loops run back to back, for executors (ufunc_loops.h);
- image_kernels: the per-sample image kernels (flip, ToTensor) of the image ops on CPU (image_kernels.h);
- update_kernels: the one-pass SGD step of the optimizer update ops on CPU (update_kernels.h);
- act_kernels: relu and its gradient, each in one pass, on CPU (act_kernels.h);
- pool_kernels: 2-D max pooling and its gradient on CPU (pool_kernels.h);
- conv_kernels: a convolution's window copies on CPU, im2col and col2im, and the Winograd F(2x2, 3x3)
  transforms (conv_kernels.h);
- norm_kernels: BatchNorm's per-channel statistics, gradient sums and affine passes on CPU (norm_kernels.h);
- gemm:        a BLAS sgemm installed at import (oneMKL's, split over the team, or numpy's OpenBLAS) (gemm.h);
- lstm_kernels: one direction of an LSTM layer over a sequence, forward and backward, on CPU (lstm_kernels.h);
- softmax_kernels: softmax and log_softmax over rows, forward and backward, on CPU (softmax_kernels.h);
- thread_pool: the one team of CPU threads that BLAS's parallel regions and the kernels' split loops
  share (thread_pool.h);
- engine_bench: benchmark-only helpers (an empty op, a C-side push loop: engine_bench.h).

fast_math.h (vectorizable exp, tanh and sigmoid) is a header the LSTM and softmax kernels share,
not a component: it has no functions of its own in the module.

Python code reaches the components through `ember.engine.native`, not through this module.
"""
import os
import re

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
COMPONENTS = ("engine", "collectives", "host_copy", "ufunc_loops", "image_kernels", "update_kernels", "act_kernels",
              "pool_kernels",
              "conv_kernels", "norm_kernels", "gemm", "lstm_kernels", "softmax_kernels", "thread_pool", "engine_bench")


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


# Python callbacks the C core calls (an async or NaiveEngine Python op, a Python policy's key, the
# collective queue's failure check).
PYTHON_CALLBACKS = """
extern "Python" int ember_py_run(intptr_t id, ember_opr *op);
extern "Python" int64_t ember_py_policy_key(const char *name, int priority, uint64_t seq, int dependants, int queue);
extern "Python" int ember_py_coll_check(void *ctx, const char *name, int why, int code);
"""

# The binding's glue (not part of the engine's C API).
# - An async or NaiveEngine Python op is the op body ember_py_op with its handle (an integer key of
#   ember.engine.core's op table) as context, pushed by ember_py_push; it runs through the cffi
#   callback ember_py_run.
# - Every other Python op is ember_py_fn_op with the callable itself as context (a reference the
#   op owns).  It is pushed by `_native.push_fn` / `_native.push_fn_handles`, functions written
#   against the CPython API and installed into the module by ember_py_install: unlike a cffi call
#   they keep the GIL, so a push hands nothing to a worker waiting for the GIL (the hand-over per
#   push made a stream of pushes cost three times the push).  The op runs by calling the callable
#   from C; a worker runs such ops in engine sessions (ember_set_session) that hold the GIL from
#   enter to leave: one GIL acquisition for the ops one after another; one that ends without
#   running (skipped, cancelled) drops its reference (ember_py_fn_drop).  An exception is turned
#   into an error id by the Python function given to `_native.bind_fn_ops`.
GLUE_DECLS = """
int ember_py_op(void *ctx, ember_opr *op);
int ember_py_push(ember_engine *e, intptr_t id, ember_var *const *vars, int nread, int nwrite,
                  const ember_op_attrs *attrs);
int ember_py_install(ember_engine *e);
"""
GLUE = r"""
#include <pthread.h>
#include <string.h>

static int ember_py_run(intptr_t id, ember_opr *op);
int ember_py_op(void *ctx, ember_opr *op) { return ember_py_run((intptr_t)ctx, op); }
int ember_py_push(ember_engine *e, intptr_t id, ember_var *const *vars, int nread, int nwrite,
                  const ember_op_attrs *attrs) {
    return ember_push(e, ember_py_op, (void *)id, vars, nread, nwrite, attrs);
}

#define PYFN_STACK_VARS 8

static ember_engine *pyfn_engine;
static struct _cffi_ctypedescr *pyfn_var_type, *pyfn_attrs_type; /* ffi.typeof('ember_var *'), ... */
static PyObject *pyfn_on_error; /* on_error(exc, name) -> error id, with the GIL */
static PyObject *pyfn_attr_h;   /* "_h": a Var's handle */

/* Calls fn (the GIL held) and drops the op's reference to it: 0 or an error id. */
static int pyfn_call(PyObject *fn, ember_opr *op) {
    PyObject *r = PyObject_CallObject(fn, NULL);
    Py_DECREF(fn);
    if (r) {
        Py_DECREF(r);
        return 0;
    }
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    if (tb && exc) PyException_SetTraceback(exc, tb);
    const char *name = ember_op_name(op);
    PyObject *id = PyObject_CallFunction(pyfn_on_error, "Oz", exc ? exc : Py_None, name);
    Py_XDECREF(type);
    Py_XDECREF(exc);
    Py_XDECREF(tb);
    long eid = id ? PyLong_AsLong(id) : -1;
    Py_XDECREF(id);
    if (eid <= 0) { /* the error table itself failed: report it, keep the op failed */
        PyErr_WriteUnraisable(pyfn_on_error);
        eid = EMBER_ERR_CANCELLED + 1;
    }
    return (int)eid;
}

/* PyGILState_Ensure in a thread Python did not start makes a thread state, and the matching
 * Release destroys it: microseconds per op.  Such a thread (a worker) keeps its thread state
 * instead (one Ensure it releases only when the thread exits; cffi's callbacks do the same), so
 * later Ensures only take the GIL. */
static _Thread_local int pyfn_thread_seen;
static pthread_key_t pyfn_exit_key;
static pthread_once_t pyfn_exit_once = PTHREAD_ONCE_INIT;

/* At the exit of such a thread (glibc has already cleared Python's own thread-local pointer to the
 * thread state then, so PyGILState_* cannot be used): free the kept thread state. */
static void pyfn_thread_exit(void *tstate) {
    if (!Py_IsInitialized()) return; /* the interpreter is gone, and its thread states with it */
    PyThreadState *ts = tstate;
    PyEval_RestoreThread(ts);
    PyThreadState_Clear(ts);
    (void)PyEval_SaveThread();
    PyThreadState_Delete(ts);
}

static void pyfn_exit_key_make(void) { (void)pthread_key_create(&pyfn_exit_key, pyfn_thread_exit); }

static PyGILState_STATE pyfn_gil(void) {
    if (!pyfn_thread_seen) {
        pyfn_thread_seen = 1;
        if (!PyGILState_GetThisThreadState()) {
            PyGILState_STATE g = PyGILState_Ensure();
            (void)PyGILState_Ensure();
            pthread_once(&pyfn_exit_once, pyfn_exit_key_make);
            pthread_setspecific(pyfn_exit_key, PyGILState_GetThisThreadState());
            return g;
        }
    }
    return PyGILState_Ensure();
}

static int ember_py_fn_op(void *ctx, ember_opr *op) {
    PyGILState_STATE g = pyfn_gil();
    int rc = pyfn_call((PyObject *)ctx, op);
    PyGILState_Release(g);
    return rc;
}

static _Thread_local PyGILState_STATE pyfn_session_state;

static void ember_py_fn_enter(void) { pyfn_session_state = pyfn_gil(); }
static void ember_py_fn_leave(void) { PyGILState_Release(pyfn_session_state); }

static void ember_py_fn_drop(void *ctx) {
    PyGILState_STATE g = pyfn_gil();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

/* The handle of a Var (vars) or a handle itself (handles); NULL without an exception: deleted. */
static ember_var *pyfn_var(PyObject *obj, int handles) {
    if (handles) return (ember_var *)_cffi_to_c_pointer(obj, pyfn_var_type);
    PyObject *h = PyObject_GetAttr(obj, pyfn_attr_h);
    if (!h) return NULL;
    ember_var *v = h == Py_None ? NULL : (ember_var *)_cffi_to_c_pointer(h, pyfn_var_type);
    Py_DECREF(h);
    return v;
}

/* The variables of the sequences a (reads) and b (writes; b NULL: a holds nread reads then the
 * writes) in *vs (stack when they fit, else allocated: free with pyfn_vars_free), their count in *n,
 * the reads' in *nr.  0, -1 with an exception set, or 1 when an item is not a live Var or the
 * sequences are not lists/tuples (the caller's general path names it). */
static int pyfn_vars(PyObject *a, PyObject *b, Py_ssize_t nread, int handles, ember_var **stack, ember_var ***vs,
                     Py_ssize_t *n, Py_ssize_t *nr) {
    if (!(PyList_CheckExact(a) || PyTuple_CheckExact(a)) || (b && !(PyList_CheckExact(b) || PyTuple_CheckExact(b))))
        return 1;
    Py_ssize_t na = PySequence_Size(a), nb = b ? PySequence_Size(b) : 0;
    *n = na + nb;
    *nr = b ? na : nread;
    if (*nr < 0 || *nr > *n || *n > 1 << 20) return 1;
    *vs = *n <= PYFN_STACK_VARS ? stack : PyMem_Malloc((size_t)*n * sizeof **vs);
    if (!*vs) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *item = i < na ? PySequence_GetItem(a, i) : PySequence_GetItem(b, i - na);
        if (!item) return -1;
        (*vs)[i] = pyfn_var(item, handles);
        Py_DECREF(item);
        if (!(*vs)[i]) {
            if (PyErr_Occurred()) PyErr_Clear();
            return 1;
        }
    }
    return 0;
}

static void pyfn_vars_free(ember_var **vs, ember_var **stack) {
    if (vs && vs != stack) PyMem_Free(vs);
}

/* Pushes fn on the variables of the sequences a and b (as pyfn_vars).  Returns 0, a negative
 * engine code, or 1 when it pushed nothing (see pyfn_vars). */
static int pyfn_push(PyObject *fn, PyObject *a, PyObject *b, Py_ssize_t nread, PyObject *attrs_obj, int handles) {
    if (!pyfn_engine) return 1;
    const ember_op_attrs *attrs = (const ember_op_attrs *)_cffi_to_c_pointer(attrs_obj, pyfn_attrs_type);
    if (!attrs) return PyErr_Occurred() ? -1 : 1;
    ember_var *stack[PYFN_STACK_VARS], **vs = NULL;
    Py_ssize_t n, nr;
    int rc = pyfn_vars(a, b, nread, handles, stack, &vs, &n, &nr);
    if (rc == 0) {
        Py_INCREF(fn); /* the op's reference, dropped when it ran or ended without running */
        rc = ember_push(pyfn_engine, ember_py_fn_op, fn, vs, (int)nr, (int)(n - nr), attrs);
        if (rc < 0) Py_DECREF(fn);
    }
    pyfn_vars_free(vs, stack);
    if (rc == 0 && ember_run_ahead_over(pyfn_engine)) {
        /* far ahead of the workers: wait, without the GIL (the ops ahead may need it) */
        Py_BEGIN_ALLOW_THREADS
        ember_run_ahead_wait(pyfn_engine);
        Py_END_ALLOW_THREADS
    }
    return rc;
}

/* claim(handles, nread, attrs) -> the claimed op's address, or 0: ember_claim keeping the GIL (it
 * never blocks; a cffi call would hand the GIL over and back) */
static PyObject *pyfn_claim(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *handles, *attrs_obj;
    Py_ssize_t nread;
    if (!PyArg_ParseTuple(args, "OnO:claim", &handles, &nread, &attrs_obj)) return NULL;
    const ember_op_attrs *attrs = (const ember_op_attrs *)_cffi_to_c_pointer(attrs_obj, pyfn_attrs_type);
    if (!attrs) return NULL;
    ember_var *stack[PYFN_STACK_VARS], **vs = NULL;
    Py_ssize_t n, nr;
    int rc = pyfn_vars(handles, NULL, nread, 1, stack, &vs, &n, &nr);
    ember_opr *op = NULL;
    if (rc == 0 && pyfn_engine) op = ember_claim(pyfn_engine, vs, (int)nr, (int)(n - nr), attrs);
    pyfn_vars_free(vs, stack);
    if (rc < 0) return NULL;
    if (rc > 0) {
        PyErr_SetString(PyExc_TypeError, "claim: handles must be a list or tuple of live engine variables");
        return NULL;
    }
    return PyLong_FromVoidPtr(op);
}

/* var_new() -> a new engine variable's handle, var_delete(handle): ember_var_new / ember_var_delete
 * keeping the GIL (neither blocks: a delete is an op that runs when the variable's last op ends) */
static PyObject *pyfn_var_new(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (!pyfn_engine || !pyfn_var_type) {
        PyErr_SetString(PyExc_RuntimeError, "var_new: the engine binding is not set up");
        return NULL;
    }
    return _cffi_from_c_pointer((char *)ember_var_new(pyfn_engine), pyfn_var_type);
}

static PyObject *pyfn_var_delete(PyObject *self, PyObject *handle) {
    (void)self;
    ember_var *v = (ember_var *)_cffi_to_c_pointer(handle, pyfn_var_type);
    if (!v) return PyErr_Occurred() ? NULL : (PyErr_SetString(PyExc_ValueError, "var_delete: no variable"), NULL);
    if (pyfn_engine) ember_var_delete(pyfn_engine, v);
    Py_RETURN_NONE;
}

/* complete(op, err): ember_complete on a claimed op's address, keeping the GIL (it never blocks: the
 * ops it makes ready are queued, or started here as any completion starts them) */
static PyObject *pyfn_complete(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *addr;
    int err;
    if (!PyArg_ParseTuple(args, "Oi:complete", &addr, &err)) return NULL;
    ember_opr *op = PyLong_AsVoidPtr(addr);
    if (!op) return PyErr_Occurred() ? NULL : (PyErr_SetString(PyExc_ValueError, "complete: no op"), NULL);
    ember_complete(op, err);
    Py_RETURN_NONE;
}

static PyObject *pyfn_result(int rc) {
    if (rc == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLong(rc);
}

/* push_fn(fn, reads, writes, attrs) -> 0 pushed, < 0 rejected by the engine, 1 not pushed (an item
 * is not a live Var, or the sequences are not lists/tuples) */
static PyObject *pyfn_push_vars(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *fn, *reads, *writes, *attrs;
    if (!PyArg_UnpackTuple(args, "push_fn", 4, 4, &fn, &reads, &writes, &attrs)) return NULL;
    return pyfn_result(pyfn_push(fn, reads, writes, 0, attrs, 0));
}

/* push_fn_handles(fn, handles, nread, attrs): the same with var handles (nread reads, then writes) */
static PyObject *pyfn_push_handles(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *fn, *handles, *attrs;
    Py_ssize_t nread;
    if (!PyArg_ParseTuple(args, "OOnO:push_fn_handles", &fn, &handles, &nread, &attrs)) return NULL;
    return pyfn_result(pyfn_push(fn, handles, NULL, nread, attrs, 1));
}

/* bind_fn_ops(var_type, attrs_type, on_error): what the functions above need from Python */
static PyObject *pyfn_bind(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *vt, *at, *cb;
    if (!PyArg_UnpackTuple(args, "bind_fn_ops", 3, 3, &vt, &at, &cb)) return NULL;
    Py_INCREF(vt);
    Py_INCREF(at);
    Py_INCREF(cb);
    pyfn_var_type = (struct _cffi_ctypedescr *)vt; /* kept for the life of the process */
    pyfn_attrs_type = (struct _cffi_ctypedescr *)at;
    Py_XDECREF(pyfn_on_error);
    pyfn_on_error = cb;
    Py_RETURN_NONE;
}

/* claim_idle() -> bool and release_idle_ok(): ember_claim_idle / ember_release_idle_ok for the
 * tiny-op path, keeping the GIL (neither ever blocks): no argument conversion, no GIL hand-off. */
static PyObject *pyfn_claim_idle(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(pyfn_engine && ember_claim_idle(pyfn_engine));
}

/* pool_prewake(): ember_pool_prewake, keeping the GIL (it never blocks) */
static PyObject *pyfn_pool_prewake(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    ember_pool_prewake();
    Py_RETURN_NONE;
}

/* run_ahead_drain(): ember_run_ahead_drain, without the GIL (the ops it waits for may need it) */
static PyObject *pyfn_run_ahead_drain(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (pyfn_engine) {
        Py_BEGIN_ALLOW_THREADS
        ember_run_ahead_drain(pyfn_engine);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *pyfn_release_idle_ok(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (pyfn_engine) ember_release_idle_ok(pyfn_engine);
    Py_RETURN_NONE;
}

/* The image kernels (image_kernels.h), the SGD step (update_kernels.h), relu (act_kernels.h), max pooling
 * (pool_kernels.h), the convolution window copies (conv_kernels.h), BatchNorm's passes
 * (norm_kernels.h), the LSTM direction (lstm_kernels.h) and softmax rows (softmax_kernels.h) on numpy arrays, read
 * through the buffer protocol: one call that checks and runs (a cffi call and its argument
 * conversions cost as much as the kernel on one 32x32 image).  Each answers False, having done
 * nothing, where the arrays do not fit the kernel (the caller's numpy code runs then): not
 * C-contiguous, overlapping, other shapes or formats. */
/* From this many bytes on a kernel runs without the GIL (a batch of images, a weight: other Python
 * threads go on; the buffers stay held): below it, releasing and taking the GIL costs more. */
#define KERNEL_GIL_BYTES (1 << 16)
#define KERNEL_RUN(nbytes, call)          \
    do {                                  \
        if ((nbytes) < KERNEL_GIL_BYTES) { \
            call;                         \
        } else {                          \
            Py_BEGIN_ALLOW_THREADS        \
            call;                         \
            Py_END_ALLOW_THREADS          \
        }                                 \
    } while (0)

/* obj's C-contiguous buffer with its format (writable if asked); 0, the error cleared, if it has none */
static int kernel_buffer(PyObject *obj, Py_buffer *view, int writable) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) == 0)
        return 1;
    PyErr_Clear();
    return 0;
}

static int buffers_overlap(const Py_buffer *a, const Py_buffer *b) {
    const char *x = a->buf, *y = b->buf;
    return x < y + b->len && y < x + a->len;
}

static int img_buffers(PyObject *src, PyObject *dst, Py_buffer *s, Py_buffer *d) {
    if (!kernel_buffer(src, s, 0)) return 0;
    if (!kernel_buffer(dst, d, 1)) {
        PyBuffer_Release(s);
        return 0;
    }
    if (s->len == 0 || buffers_overlap(s, d)) {
        PyBuffer_Release(s);
        PyBuffer_Release(d);
        return 0;
    }
    return 1;
}

static int format_is(const Py_buffer *b, char code) {
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++; /* native order: numpy's own arrays */
    return f[0] == code && f[1] == 0;
}

/* reverse_axis(src, dst, axis) -> bool: dst = src reversed along axis (same shape and format) */
static PyObject *img_reverse_axis(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src, *dst;
    int axis;
    if (!PyArg_ParseTuple(args, "OOi:reverse_axis", &src, &dst, &axis)) return NULL;
    Py_buffer s, d;
    if (!img_buffers(src, dst, &s, &d)) Py_RETURN_FALSE;
    int ok = s.ndim == d.ndim && axis >= 0 && axis < s.ndim && s.itemsize == d.itemsize && s.len == d.len &&
             strcmp(s.format ? s.format : "B", d.format ? d.format : "B") == 0;
    for (int i = 0; ok && i < s.ndim; i++) ok = s.shape[i] == d.shape[i];
    if (ok) {
        int64_t outer = 1, inner = s.itemsize;
        for (int i = 0; i < axis; i++) outer *= s.shape[i];
        for (int i = axis + 1; i < s.ndim; i++) inner *= s.shape[i];
        KERNEL_RUN(s.len, ember_reverse_axis(s.buf, d.buf, outer, s.shape[axis], inner));
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&d);
    return PyBool_FromLong(ok);
}

/* bytes_to_unit_chw(src, dst) -> bool: dst (C, H, W) / (N, C, H, W) float32 = src (H, W, C) /
 * (N, H, W, C) uint8 / 255 */
static PyObject *img_bytes_to_unit_chw(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src, *dst;
    if (!PyArg_ParseTuple(args, "OO:bytes_to_unit_chw", &src, &dst)) return NULL;
    Py_buffer s, d;
    if (!img_buffers(src, dst, &s, &d)) Py_RETURN_FALSE;
    int nd = s.ndim, ok = (nd == 3 || nd == 4) && d.ndim == nd && format_is(&s, 'B') && format_is(&d, 'f');
    if (ok) {
        const Py_ssize_t *x = s.shape, *y = d.shape;
        int b = nd - 3; /* the batch axis, if any */
        ok = (b == 0 || x[0] == y[0]) && y[b] == x[b + 2] && y[b + 1] == x[b] && y[b + 2] == x[b + 1];
    }
    if (ok) {
        int64_t batch = nd == 4 ? s.shape[0] : 1, pixels = s.shape[nd - 3] * s.shape[nd - 2];
        KERNEL_RUN(s.len, ember_u8_hwc_to_chw_unit(s.buf, d.buf, batch, pixels, s.shape[nd - 1]));
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&d);
    return PyBool_FromLong(ok);
}

/* channel values of Normalize's mean or std: a tuple of 1 (every channel) or `channels` numbers, as
 * float32; 0 (the error cleared) for anything else, which the Python path checks and reports */
static int channel_values(PyObject *values, int64_t channels, float *out) {
    if (!PyTuple_Check(values)) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(values);
    if (n != 1 && n != channels) return 0;
    for (int64_t c = 0; c < channels; c++) {
        double v = PyFloat_AsDouble(PyTuple_GET_ITEM(values, n == 1 ? 0 : c));
        if (v == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        out[c] = (float)v; /* numpy's astype(float32) of the float64 value */
    }
    return 1;
}

/* normalize_f32(src, dst, mean, std) -> bool: dst = (src - mean[c]) / std[c], float32 CHW or NCHW
 * of one shape, dst the very src or apart from it; mean/std tuples of 1 or C values, C <= 4 */
static PyObject *img_normalize_f32(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src, *dst, *mean, *std;
    if (!PyArg_ParseTuple(args, "OOOO:normalize_f32", &src, &dst, &mean, &std)) return NULL;
    Py_buffer s, d;
    if (!kernel_buffer(src, &s, 0)) Py_RETURN_FALSE;
    if (!kernel_buffer(dst, &d, 1)) {
        PyBuffer_Release(&s);
        Py_RETURN_FALSE;
    }
    int nd = s.ndim, ok = (nd == 3 || nd == 4) && d.ndim == nd && s.len > 0 && format_is(&s, 'f') &&
                          format_is(&d, 'f') && (s.buf == d.buf ? s.len == d.len : !buffers_overlap(&s, &d));
    for (int i = 0; ok && i < nd; i++) ok = s.shape[i] == d.shape[i];
    float m[4], sd[4];
    int64_t channels = ok ? s.shape[nd - 3] : 0;
    ok = ok && channels <= 4 && channel_values(mean, channels, m) && channel_values(std, channels, sd);
    if (ok) {
        int64_t batch = nd == 4 ? s.shape[0] : 1, plane = s.shape[nd - 2] * s.shape[nd - 1];
        KERNEL_RUN(s.len, ember_normalize_f32(s.buf, d.buf, batch, channels, plane, m, sd));
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&d);
    return PyBool_FromLong(ok);
}

/* Up to 12 buffers held together: each C-contiguous float32, the first `nwrite` of them writable;
 * None is left empty where bit i of `optional` is set.  0, none held, unless all of them are. */
typedef struct {
    Py_buffer v[12];
    int held[12], n;
} f32_buffers;

static int f32_take(f32_buffers *b, PyObject *const *objs, int n, int nwrite, unsigned optional) {
    b->n = n;
    for (int i = 0; i < n; i++) b->held[i] = 0;
    for (int i = 0; i < n; i++) {
        if (objs[i] == Py_None && (optional >> i & 1u)) continue;
        if (!kernel_buffer(objs[i], &b->v[i], i < nwrite)) goto fail;
        b->held[i] = 1;
        if (!format_is(&b->v[i], 'f')) goto fail;
    }
    return 1;
fail:
    for (int i = 0; i < n; i++)
        if (b->held[i]) PyBuffer_Release(&b->v[i]);
    return 0;
}

static void f32_release(f32_buffers *b) {
    for (int i = 0; i < b->n; i++)
        if (b->held[i]) PyBuffer_Release(&b->v[i]);
}

/* 1 if no written buffer (the first nwrite held) overlaps another one, except that buffer w may be
 * exactly (the same start and length) any buffer j with bit j set in same[w] (same = NULL: none may) */
static int writes_apart(const f32_buffers *b, int nwrite, const unsigned *same) {
    for (int w = 0; w < nwrite; w++)
        for (int j = 0; j < b->n; j++) {
            if (j == w || !b->held[w] || !b->held[j] || !buffers_overlap(&b->v[w], &b->v[j])) continue;
            if (!same || !(same[w] >> j & 1u) || b->v[w].buf != b->v[j].buf || b->v[w].len != b->v[j].len) return 0;
        }
    return 1;
}

/* data viewed as (outer, channels, inner) around axis; 0 if axis is out of range */
static int channel_dims(const Py_buffer *x, int axis, int64_t dims[3]) {
    if (axis < 0 || axis >= x->ndim) return 0;
    dims[0] = dims[2] = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (i < axis) dims[0] *= x->shape[i];
        if (i > axis) dims[2] *= x->shape[i];
    }
    dims[1] = x->shape[axis];
    return 1;
}

static int same_shape(const Py_buffer *a, const Py_buffer *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

/* sgd_f32(w, g, out, a, b, clip, keep) -> bool: ember_sgd_f32 on three float32 buffers of one length,
 * C-contiguous; out is w or overlaps neither input (False, nothing done, otherwise) */
static PyObject *upd_sgd_f32(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[3];
    float a, b, clip, keep;
    if (!PyArg_ParseTuple(args, "OOOffff:sgd_f32", &o[1], &o[2], &o[0], &a, &b, &clip, &keep)) return NULL;
    f32_buffers v;
    if (!f32_take(&v, o, 3, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *out = &v.v[0], *w = &v.v[1], *g = &v.v[2];
    static const unsigned same[1] = {1u << 1}; /* out may be w */
    int ok = w->len == g->len && w->len == out->len && w->len > 0 && writes_apart(&v, 1, same);
    if (ok) KERNEL_RUN(w->len, ember_sgd_f32(w->buf, g->buf, out->buf, (int64_t)(w->len / (Py_ssize_t)sizeof(float)), a,
                                             b, clip, keep));
    f32_release(&v);
    return PyBool_FromLong(ok);
}

/* relu_f32(x, y) -> bool: ember_relu_f32 on two float32 buffers of one length, C-contiguous; y is x
 * itself or overlaps it not at all (False, nothing done, otherwise) */
static PyObject *act_relu(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[2];
    if (!PyArg_ParseTuple(args, "OO:relu_f32", &o[1], &o[0])) return NULL;
    f32_buffers v;
    if (!f32_take(&v, o, 2, 1, 0)) Py_RETURN_FALSE;
    static const unsigned same[1] = {1u << 1}; /* y may be x */
    int ok = v.v[1].len == v.v[0].len && v.v[0].len > 0 && writes_apart(&v, 1, same);
    if (ok) KERNEL_RUN(v.v[0].len, ember_relu_f32(v.v[1].buf, v.v[0].buf, (int64_t)(v.v[0].len / 4)));
    f32_release(&v);
    return PyBool_FromLong(ok);
}

/* relu_backward_f32(dy, y, dx) -> bool: ember_relu_backward_f32 on three float32 buffers of one length,
 * C-contiguous; dx is dy or y itself or overlaps neither (False, nothing done, otherwise) */
static PyObject *act_relu_backward(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO:relu_backward_f32", &o[1], &o[2], &o[0])) return NULL;
    f32_buffers v;
    if (!f32_take(&v, o, 3, 1, 0)) Py_RETURN_FALSE;
    static const unsigned same[1] = {1u << 1 | 1u << 2}; /* dx may be dy or y */
    Py_ssize_t len = v.v[0].len;
    int ok = v.v[1].len == len && v.v[2].len == len && len > 0 && writes_apart(&v, 1, same);
    if (ok) KERNEL_RUN(len, ember_relu_backward_f32(v.v[1].buf, v.v[2].buf, v.v[0].buf, (int64_t)(len / 4)));
    f32_release(&v);
    return PyBool_FromLong(ok);
}

/* A window's sizes, steps and pads are at most this: the kernels' index products then stay far
 * inside int64_t for any array that fits in memory. */
#define WINDOW_MAX ((int64_t)1 << 30)

/* The pooling geometry of x (N, C, H, W) -> y (N, C, OH, OW) with the given window, or 0 if the
 * shapes and numbers do not make one */
static int pool_geometry(const Py_buffer *x, const Py_buffer *y, const int64_t win[6], ember_pool2d *g) {
    if (x->ndim != 4 || y->ndim != 4 || x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1]) return 0;
    for (int i = 0; i < 6; i++)
        if (win[i] < (i < 4 ? 1 : 0) || win[i] > WINDOW_MAX) return 0;
    *g = (ember_pool2d){x->shape[0] * x->shape[1], x->shape[2], x->shape[3], y->shape[2], y->shape[3],
                        win[0], win[1], win[2], win[3], win[4], win[5]};
    return 1;
}

/* max_pool2d_f32(x, y, kh, kw, sh, sw, ph, pw) -> bool: y = ember_max_pool2d_f32(x); x (N, C, H, W) and
 * y (N, C, OH, OW) float32, C-contiguous, not overlapping (False, nothing done, otherwise) */
static PyObject *pool_max2d(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[2];
    int64_t win[6];
    if (!PyArg_ParseTuple(args, "OOLLLLLL:max_pool2d_f32", &o[1], &o[0], &win[0], &win[1], &win[2], &win[3], &win[4],
                          &win[5]))
        return NULL;
    f32_buffers v;
    if (!f32_take(&v, o, 2, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *y = &v.v[0], *x = &v.v[1];
    ember_pool2d g;
    int ok = pool_geometry(x, y, win, &g) && writes_apart(&v, 1, NULL), rc = 0;
    if (ok) KERNEL_RUN(x->len, rc = ember_max_pool2d_f32(&g, x->buf, y->buf));
    f32_release(&v);
    if (rc) return PyErr_NoMemory();
    return PyBool_FromLong(ok);
}

/* max_pool2d_backward_f32(x, y, dy, dx, kh, kw, sh, sw, ph, pw) -> bool: dx = the gradient of
 * y = max_pool2d(x) given dy; dx as x, dy as y, float32, C-contiguous, dx overlapping none */
static PyObject *pool_max2d_backward(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    int64_t win[6];
    if (!PyArg_ParseTuple(args, "OOOOLLLLLL:max_pool2d_backward_f32", &o[1], &o[2], &o[3], &o[0], &win[0], &win[1],
                          &win[2], &win[3], &win[4], &win[5]))
        return NULL;
    f32_buffers v;
    if (!f32_take(&v, o, 4, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *dx = &v.v[0], *x = &v.v[1], *y = &v.v[2], *dy = &v.v[3];
    ember_pool2d g;
    int ok = pool_geometry(x, y, win, &g) && same_shape(dy, y) && same_shape(dx, x) && writes_apart(&v, 1, NULL);
    if (ok) KERNEL_RUN(x->len, ember_max_pool2d_backward_f32(&g, x->buf, y->buf, dy->buf, dx->buf));
    f32_release(&v);
    return PyBool_FromLong(ok);
}

/* The windows of a 4-D float32 map (C, N, H, W), or (C, H, W, N) when batch_last, and of its
 * C-contiguous float32 columns (C, kh, kw, windows); 0 unless every window lies inside the map and
 * the columns have exactly their size */
static int conv_windows(const Py_buffer *x, const Py_buffer *cols, int batch_last, const int64_t p[8],
                        ember_conv_windows *g) {
    if (x->ndim != 4) return 0;
    for (int i = 0; i < 8; i++)
        if (p[i] < 1 || p[i] > WINDOW_MAX) return 0;
    const Py_ssize_t *s = x->shape;
    *g = (ember_conv_windows){s[0], batch_last ? 1 : s[1], batch_last ? s[3] : 1, batch_last ? s[1] : s[2],
                              batch_last ? s[2] : s[3], p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]};
    if ((g->kh - 1) * g->dh + (g->oh - 1) * g->sh >= g->h) return 0;
    if ((g->kw - 1) * g->dw + (g->ow - 1) * g->sw >= g->w) return 0;
    /* the columns' size, in a double first: kh * oh and kw * ow are bounded by the map, but their
     * product with the channels and batch need not fit (then no buffer has that size) */
    double size = (double)g->channels * g->kh * g->kw * g->outer * g->oh * g->ow * g->inner * sizeof(float);
    if (size != (double)cols->len) return 0;
    return !buffers_overlap(x, cols);
}

/* im2col_f32(x, cols, batch_last, oh, ow, kh, kw, sh, sw, dh, dw) -> bool: cols = ember_im2col_f32(x)
 * (False, nothing done, where the arrays do not fit) */
/* col2im_f32(cols, x, batch_last, oh, ow, kh, kw, sh, sw, dh, dw) -> bool: x += ember_col2im_f32(cols) */
static PyObject *conv_copy(PyObject *args, int to_cols) {
    PyObject *o[2]; /* the written array first: (cols, x) for im2col, (x, cols) for col2im */
    int batch_last;
    int64_t p[8];
    if (!PyArg_ParseTuple(args, to_cols ? "OOpLLLLLLLL:im2col_f32" : "OOpLLLLLLLL:col2im_f32", &o[1], &o[0],
                          &batch_last, &p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &p[6], &p[7]))
        return NULL;
    f32_buffers v;
    if (!f32_take(&v, o, 2, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *x = &v.v[to_cols ? 1 : 0], *cols = &v.v[to_cols ? 0 : 1];
    ember_conv_windows g;
    int ok = conv_windows(x, cols, batch_last, p, &g);
    if (ok && to_cols) KERNEL_RUN(cols->len, ember_im2col_f32(&g, x->buf, cols->buf));
    if (ok && !to_cols) KERNEL_RUN(cols->len, ember_col2im_f32(&g, cols->buf, x->buf));
    f32_release(&v);
    return PyBool_FromLong(ok);
}

static PyObject *conv_im2col(PyObject *self, PyObject *args) {
    (void)self;
    return conv_copy(args, 1);
}

static PyObject *conv_col2im(PyObject *self, PyObject *args) {
    (void)self;
    return conv_copy(args, 0);
}

/* winograd_weights_f32(w, u, data_grad) -> bool: ember_winograd_weights_f32 on float32 buffers,
 * C-contiguous: w 4-D (f, c, 3, 3), u of 16 * f * c values, apart from w */
static PyObject *winograd_weights(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[2]; /* written first: u; then w */
    int data_grad;
    if (!PyArg_ParseTuple(args, "OOp:winograd_weights_f32", &o[1], &o[0], &data_grad)) return NULL;
    f32_buffers b;
    if (!f32_take(&b, o, 2, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *w = &b.v[1];
    int ok = w->ndim == 4 && w->shape[2] == 3 && w->shape[3] == 3 && w->len > 0 &&
             b.v[0].len == (Py_ssize_t)(16 * w->shape[0] * w->shape[1] * 4) && writes_apart(&b, 1, NULL);
    if (ok) KERNEL_RUN(b.v[0].len, ok = ember_winograd_weights_f32(w->buf, w->shape[0], w->shape[1], data_grad, b.v[0].buf));
    f32_release(&b);
    return PyBool_FromLong(ok);
}

/* winograd_input_f32(x, v), winograd_grad_output_f32(dy, dm) -> bool: ember_winograd_input_f32 /
 * ember_winograd_grad_output_f32 on float32 buffers, C-contiguous: the map x (dy) 4-D (n, c, h, w), its
 * transform v (dm) of 16 * n * ((h + 1) / 2) * ((w + 1) / 2) * c values, apart from the map */
static PyObject *winograd_tiles(PyObject *args, const char *format,
                                int (*transform)(const float *, int64_t, int64_t, int64_t, int64_t, float *)) {
    PyObject *o[2]; /* written first: the transform; then the map */
    if (!PyArg_ParseTuple(args, format, &o[1], &o[0])) return NULL;
    f32_buffers b;
    if (!f32_take(&b, o, 2, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *x = &b.v[1];
    int ok = x->ndim == 4 && x->len > 0 && writes_apart(&b, 1, NULL);
    if (ok) {
        const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
        ok = b.v[0].len == (Py_ssize_t)(16 * n * ((h + 1) / 2) * ((w + 1) / 2) * c * 4);
        if (ok) KERNEL_RUN(b.v[0].len, ok = transform(x->buf, n, c, h, w, b.v[0].buf));
    }
    f32_release(&b);
    return PyBool_FromLong(ok);
}

static PyObject *winograd_input(PyObject *self, PyObject *args) {
    (void)self;
    return winograd_tiles(args, "OO:winograd_input_f32", ember_winograd_input_f32);
}

static PyObject *winograd_grad_output(PyObject *self, PyObject *args) {
    (void)self;
    return winograd_tiles(args, "OO:winograd_grad_output_f32", ember_winograd_grad_output_f32);
}

/* winograd_output_f32(m, y, shift, relu) -> bool: ember_winograd_output_f32 on float32 buffers,
 * C-contiguous: y 4-D (n, f, h, w), m of 16 * n * ((h + 1) / 2) * ((w + 1) / 2) * f values, shift None or
 * of f values; y overlaps neither */
static PyObject *winograd_output(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[3]; /* written first: y; then m, shift */
    int relu;
    if (!PyArg_ParseTuple(args, "OOOp:winograd_output_f32", &o[1], &o[0], &o[2], &relu)) return NULL;
    f32_buffers b;
    if (!f32_take(&b, o, 3, 1, 1u << 2)) Py_RETURN_FALSE;
    const Py_buffer *y = &b.v[0];
    int ok = y->ndim == 4 && y->len > 0 && writes_apart(&b, 1, NULL);
    if (ok) {
        const int64_t n = y->shape[0], f = y->shape[1], h = y->shape[2], w = y->shape[3];
        ok = b.v[1].len == (Py_ssize_t)(16 * f * n * ((h + 1) / 2) * ((w + 1) / 2) * 4) &&
             (!b.held[2] || b.v[2].len == (Py_ssize_t)(f * 4));
        if (ok)
            KERNEL_RUN(b.v[1].len, ok = ember_winograd_output_f32(b.v[1].buf, n, f, h, w,
                                                                  b.held[2] ? b.v[2].buf : NULL, relu, y->buf));
    }
    f32_release(&b);
    return PyBool_FromLong(ok);
}

/* winograd_grad_weights_f32(du, dw) -> bool: ember_winograd_grad_weights_f32 on float32 buffers,
 * C-contiguous: dw 4-D (f, c, 3, 3), du of 16 * f * c values, apart from dw */
static PyObject *winograd_grad_weights(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[2]; /* written first: dw; then du */
    if (!PyArg_ParseTuple(args, "OO:winograd_grad_weights_f32", &o[1], &o[0])) return NULL;
    f32_buffers b;
    if (!f32_take(&b, o, 2, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *dw = &b.v[0];
    int ok = dw->ndim == 4 && dw->shape[2] == 3 && dw->shape[3] == 3 && dw->len > 0 &&
             b.v[1].len == (Py_ssize_t)(16 * dw->shape[0] * dw->shape[1] * 4) && writes_apart(&b, 1, NULL);
    if (ok) KERNEL_RUN(dw->len, ok = ember_winograd_grad_weights_f32(b.v[1].buf, dw->shape[0], dw->shape[1], dw->buf));
    f32_release(&b);
    return PyBool_FromLong(ok);
}

/* channel_mean_var_f32(x, axis, mean, var) -> bool: mean and var (float32, one per channel) of x along
 * every axis but `axis` (False, nothing done, where the arrays do not fit) */
static PyObject *norm_mean_var(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[3];
    int axis;
    if (!PyArg_ParseTuple(args, "OiOO:channel_mean_var_f32", &o[2], &axis, &o[0], &o[1])) return NULL;
    f32_buffers b;
    if (!f32_take(&b, o, 3, 2, 0)) Py_RETURN_FALSE;
    int64_t d[3];
    int ok = channel_dims(&b.v[2], axis, d) && b.v[0].len == d[1] * 4 && b.v[1].len == d[1] * 4 &&
             writes_apart(&b, 2, NULL),
        rc = 0;
    if (ok)
        KERNEL_RUN(b.v[2].len, rc = ember_channel_mean_var_f32(b.v[2].buf, d[0], d[1], d[2], b.v[0].buf, b.v[1].buf));
    f32_release(&b);
    if (rc) return PyErr_NoMemory();
    return PyBool_FromLong(ok);
}

/* channel_grad_sums_f32(dy, x, mean, axis, sum_dy, sum_dy_xc) -> bool: per channel, the sum of dy and
 * of dy * (x - mean) */
static PyObject *norm_grad_sums(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[5];
    int axis;
    if (!PyArg_ParseTuple(args, "OOOiOO:channel_grad_sums_f32", &o[2], &o[3], &o[4], &axis, &o[0], &o[1])) return NULL;
    f32_buffers b;
    if (!f32_take(&b, o, 5, 2, 0)) Py_RETURN_FALSE;
    int64_t d[3];
    int ok = channel_dims(&b.v[3], axis, d) && same_shape(&b.v[2], &b.v[3]) && b.v[4].len == d[1] * 4 &&
             b.v[0].len == d[1] * 4 && b.v[1].len == d[1] * 4 && writes_apart(&b, 2, NULL),
        rc = 0;
    if (ok)
        KERNEL_RUN(b.v[2].len, rc = ember_channel_grad_sums_f32(b.v[2].buf, b.v[3].buf, b.v[4].buf, d[0], d[1], d[2],
                                                                b.v[0].buf, b.v[1].buf));
    f32_release(&b);
    if (rc) return PyErr_NoMemory();
    return PyBool_FromLong(ok);
}

/* channel_affine_f32(dy, a, x, m, b, d, axis, out) -> bool: out = dy * a + (x - m) * b + d per channel
 * (dy and a None: without that term); out is x, dy, or overlaps none of the arrays */
static PyObject *norm_affine(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[7];
    int axis;
    if (!PyArg_ParseTuple(args, "OOOOOOiO:channel_affine_f32", &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &axis, &o[0]))
        return NULL;
    if ((o[1] == Py_None) != (o[2] == Py_None)) Py_RETURN_FALSE;
    f32_buffers b;
    if (!f32_take(&b, o, 7, 1, 1u << 1 | 1u << 2)) Py_RETURN_FALSE; /* dy and a may be None */
    Py_buffer *out = &b.v[0], *x = &b.v[3];
    int has_dy = b.held[1];
    int64_t d[3];
    int ok = channel_dims(x, axis, d) && same_shape(out, x) && (!has_dy || same_shape(&b.v[1], x));
    for (int i = 2; ok && i < 7; i++) ok = i == 3 || !b.held[i] || b.v[i].len == d[1] * 4;
    static const unsigned same[1] = {1u << 1 | 1u << 3}; /* out may be dy or x */
    ok = ok && writes_apart(&b, 1, same);
    if (ok)
        KERNEL_RUN(x->len, ember_channel_affine_f32(has_dy ? b.v[1].buf : NULL, has_dy ? b.v[2].buf : NULL, x->buf,
                                                    b.v[4].buf, b.v[5].buf, b.v[6].buf, d[0], d[1], d[2], out->buf));
    f32_release(&b);
    return PyBool_FromLong(ok);
}

/* The sizes, in bytes, of an LSTM direction's arrays (lstm_kernels.h) for t_len steps, n sequences,
 * h units: wh, bias, gates / d_a, a state sequence, tc / d_out, one state */
static void lstm_sizes(int64_t t_len, int64_t n, int64_t h, Py_ssize_t out[6]) {
    const int64_t st = n * h, v[6] = {4 * h * h, 4 * h, 4 * st * t_len, st * (t_len + 1), st * t_len, st};
    for (int i = 0; i < 6; i++) out[i] = (Py_ssize_t)(v[i] * 4);
}

/* lstm_forward_f32(wh, bias, gates, c_seq, tc, h_seq, reverse) -> bool: ember_lstm_forward_f32 on
 * float32 buffers, C-contiguous, h_seq 3-D (t_len + 1, n, h) and the others of lstm_kernels.h's sizes
 * for it, no written one overlapping another buffer; False without a GEMM that takes the sizes
 * (ember_gemm_fits) or without fm_fast; MemoryError without scratch */
static PyObject *lstm_forward(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[6]; /* written first: gates, c_seq, tc, h_seq; then wh, bias */
    int reverse;
    if (!PyArg_ParseTuple(args, "OOOOOOp:lstm_forward_f32", &o[4], &o[5], &o[0], &o[1], &o[2], &o[3], &reverse))
        return NULL;
    f32_buffers b;
    if (!ember_gemm_ready() || !fm_fast() || !f32_take(&b, o, 6, 4, 0)) Py_RETURN_FALSE;
    const Py_buffer *hs = &b.v[3];
    int64_t t_len = hs->ndim == 3 ? hs->shape[0] - 1 : 0, n = hs->ndim == 3 ? hs->shape[1] : 0;
    int64_t h = hs->ndim == 3 ? hs->shape[2] : 0;
    Py_ssize_t z[6];
    lstm_sizes(t_len, n, h, z);
    int ok = t_len > 0 && n > 0 && h > 0 && ember_gemm_fits(4 * h > n ? 4 * h : n) && b.v[4].len == z[0] &&
             b.v[5].len == z[1] && b.v[0].len == z[2] && b.v[1].len == z[3] && b.v[2].len == z[4] && hs->len == z[3] &&
             writes_apart(&b, 4, NULL);
    int rc = 0;
    if (ok)
        KERNEL_RUN(b.v[0].len, rc = ember_lstm_forward_f32(t_len, n, h, reverse, b.v[4].buf, b.v[5].buf, b.v[0].buf,
                                                           b.v[1].buf, b.v[2].buf, b.v[3].buf));
    f32_release(&b);
    if (rc != 0) return PyErr_NoMemory();
    return PyBool_FromLong(ok);
}

/* lstm_backward_f32(wh, gates, c_seq, tc, d_out, dh, dc, d_a, reverse) -> bool: ember_lstm_backward_f32
 * on float32 buffers, C-contiguous, d_out 3-D (t_len, n, h) and the others of lstm_kernels.h's sizes
 * for it, no written one overlapping another buffer; False without a GEMM that takes the sizes */
static PyObject *lstm_backward(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[8]; /* written first: dh, dc, d_a; then wh, gates, c_seq, tc, d_out */
    int reverse;
    if (!PyArg_ParseTuple(args, "OOOOOOOOp:lstm_backward_f32", &o[3], &o[4], &o[5], &o[6], &o[7], &o[0], &o[1],
                          &o[2], &reverse))
        return NULL;
    f32_buffers b;
    if (!ember_gemm_ready() || !f32_take(&b, o, 8, 3, 0)) Py_RETURN_FALSE;
    const Py_buffer *d = &b.v[7];
    int64_t t_len = d->ndim == 3 ? d->shape[0] : 0, n = d->ndim == 3 ? d->shape[1] : 0;
    int64_t h = d->ndim == 3 ? d->shape[2] : 0;
    Py_ssize_t z[6];
    lstm_sizes(t_len, n, h, z);
    int ok = t_len > 0 && n > 0 && h > 0 && ember_gemm_fits(4 * h > n ? 4 * h : n) && b.v[3].len == z[0] &&
             b.v[4].len == z[2] && b.v[5].len == z[3] && b.v[6].len == z[4] && d->len == z[4] && b.v[0].len == z[5] &&
             b.v[1].len == z[5] && b.v[2].len == z[2] && writes_apart(&b, 3, NULL);
    if (ok)
        KERNEL_RUN(b.v[2].len, ember_lstm_backward_f32(t_len, n, h, reverse, b.v[3].buf, b.v[4].buf, b.v[5].buf,
                                                       b.v[6].buf, b.v[7].buf, b.v[0].buf, b.v[1].buf, b.v[2].buf));
    f32_release(&b);
    return PyBool_FromLong(ok);
}

/* sgemm_f32(a, b, c, trans_a, trans_b, beta, bias=None) -> bool: ember_sgemm_bias on 2-D C-contiguous
 * float32 buffers, c (m, n) = op(a) op(b) + beta c (+ bias, n floats, on every row) with op(x) = x^T where
 * trans_x (a transposed is stored (k, m)); False, nothing done, without an installed sgemm that takes
 * the sizes, on shapes that do not fit, an empty product or a c that overlaps a, b or the bias */
static PyObject *gemm_sgemm(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4] = {NULL, NULL, NULL, Py_None}; /* written first: c; then a, b, the bias */
    int ta, tb;
    float beta;
    if (!PyArg_ParseTuple(args, "OOOppf|O:sgemm_f32", &o[1], &o[2], &o[0], &ta, &tb, &beta, &o[3])) return NULL;
    f32_buffers v;
    if (!ember_gemm_ready() || !f32_take(&v, o, 4, 1, 1u << 3)) Py_RETURN_FALSE;
    const Py_buffer *c = &v.v[0], *a = &v.v[1], *b = &v.v[2];
    int ok = a->ndim == 2 && b->ndim == 2 && c->ndim == 2;
    int64_t m = ok ? c->shape[0] : 0, n = ok ? c->shape[1] : 0, k = ok ? a->shape[ta ? 0 : 1] : 0;
    ok = ok && m > 0 && n > 0 && k > 0 && a->shape[ta ? 1 : 0] == m && b->shape[tb ? 1 : 0] == k &&
         b->shape[tb ? 0 : 1] == n && ember_gemm_fits(m > n ? (m > k ? m : k) : (n > k ? n : k)) &&
         (!v.held[3] || v.v[3].len == n * (Py_ssize_t)sizeof(float)) && writes_apart(&v, 1, NULL);
    const float *bias = v.held[3] ? v.v[3].buf : NULL;
    if (ok)
        KERNEL_RUN((Py_ssize_t)(m * n * k), ember_sgemm_bias(ta, tb, m, n, k, a->buf, a->shape[1], b->buf,
                                                             b->shape[1], beta, c->buf, n, bias));
    f32_release(&v);
    return PyBool_FromLong(ok);
}

/* softmax_rows_f32(x, y, take_log) -> bool: ember_softmax_rows_f32 over the last axis of x, float32,
 * C-contiguous, y of x's shape: x itself or overlapping it not at all (False without fm_fast, as above) */
static PyObject *softmax_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[2];
    int take_log;
    if (!PyArg_ParseTuple(args, "OOp:softmax_rows_f32", &o[1], &o[0], &take_log)) return NULL;
    f32_buffers b;
    if (!fm_fast() || !f32_take(&b, o, 2, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *x = &b.v[1];
    int64_t n = x->ndim >= 1 ? x->shape[x->ndim - 1] : 0;
    static const unsigned same[1] = {1u << 1}; /* y may be x */
    int ok = n > 0 && x->len > 0 && same_shape(x, &b.v[0]) && writes_apart(&b, 1, same);
    if (ok) KERNEL_RUN(x->len, ember_softmax_rows_f32(x->buf, (int64_t)(x->len / 4) / n, n, take_log, b.v[0].buf));
    f32_release(&b);
    return PyBool_FromLong(ok);
}

/* softmax_rows_backward_f32(dy, y, dx, take_log) -> bool: ember_softmax_rows_backward_f32 over the last
 * axis, float32, C-contiguous, one shape; dx is dy itself or overlaps neither (False without fm_fast) */
static PyObject *softmax_rows_backward(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[3];
    int take_log;
    if (!PyArg_ParseTuple(args, "OOOp:softmax_rows_backward_f32", &o[1], &o[2], &o[0], &take_log)) return NULL;
    f32_buffers b;
    if (!fm_fast() || !f32_take(&b, o, 3, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *y = &b.v[2];
    int64_t n = y->ndim >= 1 ? y->shape[y->ndim - 1] : 0;
    static const unsigned same[1] = {1u << 1}; /* dx may be dy */
    int ok = n > 0 && y->len > 0 && same_shape(y, &b.v[0]) && same_shape(y, &b.v[1]) && writes_apart(&b, 1, same);
    if (ok)
        KERNEL_RUN(y->len, ember_softmax_rows_backward_f32(b.v[1].buf, y->buf, (int64_t)(y->len / 4) / n, n, take_log,
                                                           b.v[0].buf));
    f32_release(&b);
    return PyBool_FromLong(ok);
}

/* softmax_ce_rows_f32(x, label, logp, loss) -> bool: ember_softmax_ce_rows_f32 on float32 C-contiguous
 * buffers, x and logp (rows, n), label and loss `rows` values, the outputs overlapping nothing; False,
 * nothing done, where they do not fit, a label is not a finite class number, or without fm_fast */
static PyObject *softmax_ce_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4]; /* written: logp, loss; read: x, label */
    if (!PyArg_ParseTuple(args, "OOOO:softmax_ce_rows_f32", &o[2], &o[3], &o[0], &o[1])) return NULL;
    f32_buffers b;
    if (!fm_fast() || !f32_take(&b, o, 4, 2, 0)) Py_RETURN_FALSE;
    const Py_buffer *x = &b.v[2];
    int64_t rows = x->ndim == 2 ? x->shape[0] : 0, n = x->ndim == 2 ? x->shape[1] : 0;
    int ok = rows > 0 && n > 0 && same_shape(x, &b.v[0]) && b.v[1].len == rows * 4 && b.v[3].len == rows * 4 &&
             writes_apart(&b, 2, NULL);
    if (ok) KERNEL_RUN(x->len, ok = ember_softmax_ce_rows_f32(x->buf, b.v[3].buf, rows, n, b.v[0].buf, b.v[1].buf));
    f32_release(&b);
    return PyBool_FromLong(ok);
}

/* softmax_ce_rows_backward_f32(g, logp, label, dx) -> bool: ember_softmax_ce_rows_backward_f32 on float32
 * C-contiguous buffers, logp and dx (rows, n), g and label `rows` values, dx overlapping nothing; False,
 * nothing done, as above */
static PyObject *softmax_ce_rows_backward(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4]; /* written: dx; read: g, logp, label */
    if (!PyArg_ParseTuple(args, "OOOO:softmax_ce_rows_backward_f32", &o[1], &o[2], &o[3], &o[0])) return NULL;
    f32_buffers b;
    if (!fm_fast() || !f32_take(&b, o, 4, 1, 0)) Py_RETURN_FALSE;
    const Py_buffer *y = &b.v[2];
    int64_t rows = y->ndim == 2 ? y->shape[0] : 0, n = y->ndim == 2 ? y->shape[1] : 0;
    int ok = rows > 0 && n > 0 && same_shape(y, &b.v[0]) && b.v[1].len == rows * 4 && b.v[3].len == rows * 4 &&
             writes_apart(&b, 1, NULL);
    if (ok)
        KERNEL_RUN(y->len,
                   ok = ember_softmax_ce_rows_backward_f32(b.v[1].buf, y->buf, b.v[3].buf, rows, n, b.v[0].buf));
    f32_release(&b);
    return PyBool_FromLong(ok);
}

/* fast_math() -> bool: whether this CPU runs fast_math.h's loops vectorized (fm_fast) */
static PyObject *fast_math_available(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(fm_fast());
}

static PyMethodDef pyfn_methods[] = {
    {"fast_math", fast_math_available, METH_NOARGS, "fm_fast(): fast_math.h's loops run vectorized here"},
    {"lstm_forward_f32", lstm_forward, METH_VARARGS, "ember_lstm_forward_f32 on buffers (False: they do not fit)"},
    {"lstm_backward_f32", lstm_backward, METH_VARARGS,
     "ember_lstm_backward_f32 on buffers (False: they do not fit)"},
    {"sgemm_f32", gemm_sgemm, METH_VARARGS, "ember_sgemm on buffers (False: they do not fit)"},
    {"softmax_rows_f32", softmax_rows, METH_VARARGS, "ember_softmax_rows_f32 on buffers (False: they do not fit)"},
    {"softmax_ce_rows_f32", softmax_ce_rows, METH_VARARGS,
     "ember_softmax_ce_rows_f32 on buffers (False: they do not fit)"},
    {"softmax_ce_rows_backward_f32", softmax_ce_rows_backward, METH_VARARGS,
     "ember_softmax_ce_rows_backward_f32 on buffers (False: they do not fit)"},
    {"softmax_rows_backward_f32", softmax_rows_backward, METH_VARARGS,
     "ember_softmax_rows_backward_f32 on buffers (False: they do not fit)"},
    {"channel_mean_var_f32", norm_mean_var, METH_VARARGS,
     "ember_channel_mean_var_f32 on buffers (False: they do not fit)"},
    {"channel_grad_sums_f32", norm_grad_sums, METH_VARARGS,
     "ember_channel_grad_sums_f32 on buffers (False: they do not fit)"},
    {"channel_affine_f32", norm_affine, METH_VARARGS, "ember_channel_affine_f32 on buffers (False: they do not fit)"},
    {"im2col_f32", conv_im2col, METH_VARARGS, "ember_im2col_f32 on buffers (False: they do not fit)"},
    {"winograd_weights_f32", winograd_weights, METH_VARARGS,
     "ember_winograd_weights_f32 on buffers (False: they do not fit)"},
    {"winograd_grad_output_f32", winograd_grad_output, METH_VARARGS,
     "ember_winograd_grad_output_f32 on buffers (False: they do not fit)"},
    {"winograd_grad_weights_f32", winograd_grad_weights, METH_VARARGS,
     "ember_winograd_grad_weights_f32 on buffers (False: they do not fit)"},
    {"winograd_input_f32", winograd_input, METH_VARARGS,
     "ember_winograd_input_f32 on buffers (False: they do not fit)"},
    {"winograd_output_f32", winograd_output, METH_VARARGS,
     "ember_winograd_output_f32 on buffers (False: they do not fit)"},
    {"col2im_f32", conv_col2im, METH_VARARGS, "ember_col2im_f32 on buffers (False: they do not fit)"},
    {"max_pool2d_f32", pool_max2d, METH_VARARGS, "ember_max_pool2d_f32 on buffers (False: they do not fit)"},
    {"max_pool2d_backward_f32", pool_max2d_backward, METH_VARARGS,
     "ember_max_pool2d_backward_f32 on buffers (False: they do not fit)"},
    {"sgd_f32", upd_sgd_f32, METH_VARARGS, "ember_sgd_f32 on buffers (False: they do not fit)"},
    {"relu_f32", act_relu, METH_VARARGS, "ember_relu_f32 on buffers (False: they do not fit)"},
    {"relu_backward_f32", act_relu_backward, METH_VARARGS,
     "ember_relu_backward_f32 on buffers (False: they do not fit)"},
    {"reverse_axis", img_reverse_axis, METH_VARARGS, "ember_reverse_axis on buffers (False: they do not fit)"},
    {"bytes_to_unit_chw", img_bytes_to_unit_chw, METH_VARARGS,
     "ember_u8_hwc_to_chw_unit on buffers (False: they do not fit)"},
    {"normalize_f32", img_normalize_f32, METH_VARARGS,
     "ember_normalize_f32 on buffers and Normalize's mean/std tuples (False: they do not fit)"},
    {"claim_idle", pyfn_claim_idle, METH_NOARGS, "ember_claim_idle (GIL kept)"},
    {"pool_prewake", pyfn_pool_prewake, METH_NOARGS, "ember_pool_prewake (GIL kept)"},
    {"run_ahead_drain", pyfn_run_ahead_drain, METH_NOARGS, "ember_run_ahead_drain (GIL released)"},
    {"claim", pyfn_claim, METH_VARARGS, "ember_claim on var handles (GIL kept)"},
    {"complete", pyfn_complete, METH_VARARGS, "ember_complete on a claimed op (GIL kept)"},
    {"var_new", pyfn_var_new, METH_NOARGS, "ember_var_new (GIL kept)"},
    {"var_delete", pyfn_var_delete, METH_O, "ember_var_delete (GIL kept)"},
    {"release_idle_ok", pyfn_release_idle_ok, METH_NOARGS, "ember_release_idle_ok (GIL kept)"},
    {"push_fn", pyfn_push_vars, METH_VARARGS, "push a Python op (GIL kept)"},
    {"push_fn_handles", pyfn_push_handles, METH_VARARGS, "push a Python op on var handles (GIL kept)"},
    {"bind_fn_ops", pyfn_bind, METH_VARARGS, "set the var and attrs types and the error callback"},
    {NULL, NULL, 0, NULL},
};

/* Adds the functions above to the module ember.engine._native and makes e
 * run these ops in GIL sessions (set here, in C: from Python, cffi would hand the engine the address
 * of its own wrapper of ember_py_fn_op, never the one the ops are pushed with): 0 or -1. */
int ember_py_install(ember_engine *e) {
    ember_set_session(e, ember_py_fn_op, ember_py_fn_enter, ember_py_fn_leave, ember_py_fn_drop);
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = -1;
    PyObject *m = PyImport_AddModule("ember.engine._native"); /* borrowed */
    if (m) {
        pyfn_engine = e;
        if (!pyfn_attr_h) pyfn_attr_h = PyUnicode_InternFromString("_h");
        rc = 0;
        for (PyMethodDef *d = pyfn_methods; d->ml_name && rc == 0; d++) {
            PyObject *f = PyCFunction_New(d, NULL);
            if (!f || PyModule_AddObject(m, d->ml_name, f) < 0) {
                Py_XDECREF(f);
                rc = -1;
            }
        }
    }
    if (rc < 0) PyErr_Print();
    PyGILState_Release(g);
    return rc;
}
"""

CDEF = "".join(cdef_from_header(os.path.join(HERE, f"{c}.h")) for c in COMPONENTS) + PYTHON_CALLBACKS + GLUE_DECLS

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "ember.engine._native",
    "".join(f'#include "{c}.h"\n' for c in COMPONENTS) + '#include "fast_math.h"\n' + GLUE,
    sources=[os.path.relpath(os.path.join(HERE, f"{c}.c")) for c in COMPONENTS],
    include_dirs=[os.path.relpath(HERE)],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
    libraries=["pthread"],
    # the full C API of the Python building it (the module is built where it runs): the image
    # kernels' entry points read arrays through the buffer protocol, which the stable ABI lacks
    # before 3.11 (and cffi's generated code needs headers its 3.11 form no longer includes)
    py_limited_api=False,
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
