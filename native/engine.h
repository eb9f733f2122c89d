/* ember's dependency engine: the whole C API.
 *
 * An op is a function pointer + an opaque context + the variables it reads and
 * writes.  The engine runs an op once every earlier write of what it reads has
 * finished and every earlier read and write of what it writes has finished
 * (MXNet's rules, kept with one version queue per variable, so a push costs
 * O(variables of the op)).  Ready ops go to a worker pool per device queue,
 * ordered by a swappable scheduling policy.
 *
 * Errors are integer ids (0 = none) chosen by the caller; the engine records
 * an op's error on every variable it writes, skips ops that read a failed
 * variable (they inherit the error) and reports it at ember_wait_var /
 * ember_wait_all.  A successful write clears a variable's error.
 *
 * Benchmark-only helpers live in engine_bench.h.
 */
#ifndef EMBER_ENGINE_H
#define EMBER_ENGINE_H

#include <stdint.h>

typedef struct ember_engine ember_engine;
typedef struct ember_var ember_var;
typedef struct ember_opr ember_opr;

/* An op body.  Return 0 on success, an error id > 0 on failure, or
 * EMBER_PENDING when it will finish later through ember_complete(op, err). */
typedef int (*ember_fn)(void *ctx, ember_opr *op);
/* A custom scheduling policy: the sort key of a ready op (larger runs first). */
typedef int64_t (*ember_key_fn)(const char *name, int priority, uint64_t seq, int dependants, int queue);

#define EMBER_PENDING (-1)
#define EMBER_ERR_CANCELLED 1 /* op dropped at shutdown */

/* EMBER_PROP_ASYNC ops start in the thread that makes them ready (they must be quick). */
enum { EMBER_PROP_NORMAL = 0, EMBER_PROP_COPY = 1, EMBER_PROP_ASYNC = 2 };
/* MEMORY_AWARE: while the live-bytes estimate is at or above the threshold (ember_set_memory_high),
 * ops that free the most bytes (attrs.mem_bytes) run first; COMM_FIRST: kvstore / allreduce ops
 * (names starting "kvstore" or "allreduce") run before everything else.  docs/policy_lab.md. */
enum { EMBER_POLICY_PRIORITY = 0, EMBER_POLICY_FIFO = 1, EMBER_POLICY_LIFO = 2,
       EMBER_POLICY_CRITICAL_PATH = 3, EMBER_POLICY_CUSTOM = 4, EMBER_POLICY_MEMORY_AWARE = 5,
       EMBER_POLICY_COMM_FIRST = 6 };

/* An op's attributes (everything but its body and variables); one may serve many pushes. */
typedef struct {
    int queue;        /* 0 = cpu, 1 = copy, more from ember_queue_add */
    int priority;     /* larger runs first (priority policy) */
    int prop;         /* EMBER_PROP_* */
    int flags;        /* EMBER_ON_ERROR or 0 */
    const char *name; /* kept by pointer (profiler records): must outlive the op; may be NULL */
    int64_t mem_bytes; /* hint: net bytes the op frees when it ends (< 0: allocates); 0 = unknown */
} ember_op_attrs;

/* Run fn even when an input carries an error or the engine cancels the op (ember_op_input_failed
 * says so); the op still ends with that error (EMBER_ERR_CANCELLED when cancelled), whatever fn
 * returns.  The only public flag. */
#define EMBER_ON_ERROR 1

/* Engine lifetime.  naive != 0: every op runs synchronously inside ember_push. */
ember_engine *ember_engine_create(int naive, int cpu_threads, int copy_threads);
void ember_engine_destroy(ember_engine *e); /* finishes pending ops, joins workers */
int ember_engine_stop(ember_engine *e, int timeout_ms); /* drain (cancel what is left after timeout), join; 0 = drained */
void ember_engine_start(ember_engine *e);  /* restart workers after stop (fork) */
void ember_engine_start_in_child(ember_engine *e); /* the same in a fork()ed child, where no worker of
                                                      the parent exists (not even one a stop left behind) */
void ember_engine_set_naive(ember_engine *e, int naive);
int ember_engine_is_naive(ember_engine *e);
/* Device queues: 0 = cpu, 1 = copy; more (gpu i) are added on demand. */
int ember_queue_add(ember_engine *e, int nthreads);

/* Variables */
ember_var *ember_var_new(ember_engine *e);
void ember_var_delete(ember_engine *e, ember_var *v); /* freed after every op pending on it */

/* Push an op: `vars` holds its nread read variables, then its nwrite written ones (a variable in
 * both counts as written; duplicates are tolerated).  Returns 0, or a negative value on misuse
 * (bad queue or counts: nothing was pushed). */
int ember_push(ember_engine *e, ember_fn fn, void *ctx, ember_var *const *vars, int nread, int nwrite,
               const ember_op_attrs *attrs);
/* Ending an op that returned EMBER_PENDING, or one handed to its caller by ember_claim. */
void ember_complete(ember_opr *op, int err);
/* Whether a running op inherited an error from an input or was cancelled (only EMBER_ON_ERROR
 * ops run then). */
int ember_op_input_failed(const ember_opr *op);
/* The name an op was pushed with (NULL if none). */
const char *ember_op_name(const ember_opr *op);

/* Running an op in the calling thread: the only two ways.
 *
 * 1. The idle claim: when nothing at all is pending, no error is live (every one was raised:
 *    ember_clear_error, or released) and the profiler is off, ember_claim_idle returns 1 and, until ember_release_idle, no other op starts anywhere
 *    (workers and other callers wait), so the caller runs its op without registering it: the op
 *    sees every earlier write and no later access.  ember_release_idle records err (> 0) on the
 *    written variables.  Returns 0 when the engine is busy.
 * 2. Run here if every access can start now: ember_claim registers the op (as ember_push) only if
 *    it waits for nothing (no pending write on what it reads, nothing pending on what it writes,
 *    no live error on either, no idle claim held elsewhere, engine not cancelling) and returns it: the
 *    caller runs it, then calls ember_complete(op, err); ops pushed meanwhile wait for it.
 *    Returns NULL, having pushed nothing, otherwise.  Its fn is never called. */
int ember_claim_idle(ember_engine *e);
void ember_release_idle(ember_engine *e, ember_var *const *writes, int nwrite, int err);
void ember_release_idle_ok(ember_engine *e); /* = ember_release_idle(e, NULL, 0, 0): one argument to convert */
ember_opr *ember_claim(ember_engine *e, ember_var *const *vars, int nread, int nwrite, const ember_op_attrs *attrs);

/* Waiting: both return the error id found (0 = none). wait_all clears the
 * list of errors seen since the previous wait_all; timeout_ms < 0 waits forever;
 * a timeout returns -1. */
int ember_wait_var(ember_engine *e, ember_var *v);
int ember_wait_all(ember_engine *e, int timeout_ms);
/* ember_wait_var in steps its caller may give up between (a Python thread handling Ctrl-C):
 * ember_wait_var_now returns v's error id (0: none) when v has no pending write, -1 otherwise;
 * ember_wait_begin returns NULL when v has no pending write, else a waiter ordered after every
 * write pending now; ember_wait_poll(w, timeout_ms) returns 1 once they are done (at once for
 * NULL), 0 when timeout_ms (< 0: forever) passed first; ember_wait_end(w) lets go of it, done or
 * not (NULL is fine).  Read the error with ember_var_error afterwards. */
typedef struct ember_waiter ember_waiter;
int ember_wait_var_now(ember_var *v);
ember_waiter *ember_wait_begin(ember_engine *e, ember_var *v);
int ember_wait_poll(ember_waiter *w, int timeout_ms);
void ember_wait_end(ember_waiter *w);
int ember_var_error(ember_var *v);
/* Mark error `id` raised: no variable reports it any more (ember_var_error, waits) and ops reading
 * a variable that carries it run instead of inheriting it, as MXNet clears an exception once
 * rethrown.  Variables keep it until their next write (err_vars still counts them). */
void ember_clear_error(ember_engine *e, int id);

/* Run-ahead: a thread that pushes ops far faster than they run (a Python training loop) would queue
 * steps' worth of ops and the memory they write.  With a limit > 0, ember_run_ahead_wait blocks its
 * caller while more than `max_pending` ops are pending, until at most half are, so buffers are reused
 * while still in cache.  Workers and ops pushing ops never wait; a wait in which no op ends for 50 ms
 * gives up (an async op may wait for the caller) and none waits again until the backlog falls below
 * half the limit.  ember_run_ahead_over says whether a wait would block (cheap: call it first). */
void ember_set_run_ahead(ember_engine *e, int64_t max_pending); /* 0 = no limit (the default) */
int64_t ember_get_run_ahead(ember_engine *e);
int ember_run_ahead_over(ember_engine *e);
void ember_run_ahead_wait(ember_engine *e);
/* Wait until as many ops have ended as were pending at the call (or none is pending): what a pusher
 * that has allocated much memory for ops not yet run calls, so that their ends free what they held
 * (ember.imperative.storage's run-ahead by bytes).  Workers and ops pushing ops return at once; a
 * wait in which no op ends for 1 s gives up (an async op may wait for the caller; one large kernel
 * may run longer than ember_run_ahead_wait's 50 ms). */
void ember_run_ahead_drain(ember_engine *e);

/* Sessions: ops whose fn is `key` need a context their thread enters and leaves (Python ops: the
 * GIL).  A worker that pops one calls enter(), runs it and then, one by one, the ops of that kind
 * that come next (the op a completion of its made ready, or its queue's head), each as any op,
 * up to a time slice, and calls leave(): one GIL acquisition for many Python ops.  `drop` (may be
 * NULL) gets the ctx of such an op that ends without running (skipped, cancelled), to free it. */
void ember_set_session(ember_engine *e, ember_fn key, void (*enter)(void), void (*leave)(void),
                       void (*drop)(void *ctx));

/* Scheduling policy */
void ember_set_policy(ember_engine *e, int policy, ember_key_fn custom);
/* The memory-aware policy's threshold: its memory term applies while the live-bytes estimate (minus
 * the mem_bytes hints of every op ended so far) is >= high (INT64_MIN, the default: always). */
void ember_set_memory_high(ember_engine *e, int64_t high);
int64_t ember_memory_live_hint(ember_engine *e);

/* Error ids whose last reference went away (the caller may forget them). */
int ember_released_errors(ember_engine *e, int *buf, int cap);

/* Statistics */
typedef struct {
    uint64_t pushed, completed, failed, skipped, inline_runs;
    int64_t pending;
    int nqueues;
} ember_stats;
void ember_get_stats(ember_engine *e, ember_stats *out);
uint64_t ember_queue_stat(ember_engine *e, int queue, int which); /* which: 0 pushed, 1 run, 2 waiting */

/* Profiling: per-op timing records, near-zero cost when off. */
typedef struct {
    const char *name;
    int queue, worker;            /* worker -1: the op ran in (and ended in) a caller's thread */
    int64_t start_ns, end_ns;
    unsigned long thread;         /* pthread_self() of the thread it ended in (Python's get_ident()) */
} ember_prof_record;
void ember_profile_set(ember_engine *e, int on);
int ember_profile_fetch(ember_engine *e, ember_prof_record *buf, int cap); /* moves records out */
int64_t ember_now_ns(void);

#endif
