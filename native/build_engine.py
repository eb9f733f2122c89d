"""cffi build script (API / out-of-line mode) for ember's native engine: `ember.engine._native`."""
import os

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))

CDEF = """
typedef struct ember_engine ember_engine;
typedef struct ember_var ember_var;
typedef struct ember_opr ember_opr;
typedef int (*ember_fn)(void *ctx, ember_opr *op);
typedef int (*ember_batch_fn)(void **ctxs, ember_opr **ops, int n, int *errs);
typedef int64_t (*ember_key_fn)(const char *name, int priority, uint64_t seq, int dependants, int queue);

#define EMBER_PENDING ...
#define EMBER_REQUEUE ...
#define EMBER_ERR_CANCELLED ...
#define EMBER_FLAG_INLINE ...
#define EMBER_FLAG_CALLER ...
#define EMBER_RUN_IN_CALLER ...
#define EMBER_SKIPPED ...
enum { EMBER_PROP_NORMAL, EMBER_PROP_COPY, EMBER_PROP_ASYNC };
enum { EMBER_POLICY_PRIORITY, EMBER_POLICY_FIFO, EMBER_POLICY_LIFO,
       EMBER_POLICY_CRITICAL_PATH, EMBER_POLICY_CUSTOM };

ember_engine *ember_engine_create(int naive, int cpu_threads, int copy_threads);
void ember_engine_destroy(ember_engine *e);
int ember_engine_stop(ember_engine *e, int timeout_ms);
void ember_engine_start(ember_engine *e);
void ember_engine_set_naive(ember_engine *e, int naive);
int ember_engine_is_naive(ember_engine *e);
int ember_queue_add(ember_engine *e, int nthreads);

ember_var *ember_var_new(ember_engine *e);
void ember_var_delete(ember_engine *e, ember_var *v);
uint64_t ember_var_version(ember_var *v);

int ember_push(ember_engine *e, ember_fn fn, void *ctx,
               ember_var *const *reads, int nread, ember_var *const *writes, int nwrite,
               int queue, int priority, int prop, const char *name, int flags,
               ember_opr **run_here);
void ember_complete(ember_opr *op, int err);
int ember_inline_begin(ember_engine *e);
void ember_inline_end(ember_engine *e, ember_var *const *writes, int nwrite, int err);
int ember_wait_var(ember_engine *e, ember_var *v);
int ember_wait_all(ember_engine *e, int timeout_ms);
int ember_var_error(ember_var *v);
void ember_set_batch(ember_engine *e, ember_fn key, ember_batch_fn batch);
void ember_set_policy(ember_engine *e, int policy, ember_key_fn custom);
int ember_get_policy(ember_engine *e);
int ember_released_errors(ember_engine *e, int *buf, int cap);

typedef struct {
    uint64_t pushed, completed, failed, skipped, inline_runs;
    int64_t pending;
    int nqueues;
} ember_stats;
void ember_get_stats(ember_engine *e, ember_stats *out);
uint64_t ember_queue_stat(ember_engine *e, int queue, int which);

typedef struct {
    const char *name;
    int queue, worker;
    int64_t start_ns, end_ns;
} ember_prof_record;
void ember_profile_set(ember_engine *e, int on);
int ember_profile_fetch(ember_engine *e, ember_prof_record *buf, int cap);
int64_t ember_now_ns(void);

int ember_noop(void *ctx, ember_opr *op);
double ember_bench_native(ember_engine *e, int n, int nvars, int chain, int inline_ok);

extern "Python" int ember_py_trampoline(void *ctx, ember_opr *op);
extern "Python" int ember_py_batch(void **ctxs, ember_opr **ops, int n, int *errs);
extern "Python" int64_t ember_py_policy_key(const char *name, int priority, uint64_t seq, int dependants, int queue);
"""

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "ember.engine._native",
    '#include "engine.h"',
    sources=[os.path.relpath(os.path.join(HERE, "engine.c"))],
    include_dirs=[os.path.relpath(HERE)],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
    libraries=["pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
