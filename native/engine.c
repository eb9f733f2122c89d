/* ember's threaded dependency engine.  See engine.h for the contract and
 * docs/engine.md for the rules and a picture of a variable's version queue. */
#define _GNU_SOURCE
#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ types */

typedef struct ember_err {
    int id;
    atomic_int refs;
    atomic_int cleared;          /* raised once already (ember_clear_error): no longer skips readers */
    struct ember_err *prev, *next; /* the engine's list of live errors (under err_mu) */
} ember_err;

/* One pending access in a variable's version queue. */
typedef struct vblock {
    struct vblock *next;
    ember_opr *trigger;
    int write;
} vblock;

struct ember_var {
    pthread_mutex_t mu;
    int running_reads;     /* reads running now; -1 while a write runs */
    vblock *pending_write; /* oldest write not yet finished (queue head); NULL = queue empty */
    vblock *tail;          /* empty sentinel: the next access is written into it */
    vblock *last;          /* last real block still queued (for dependant counting) */
    int to_delete;
    _Atomic(ember_err *) err;
};

/* Private op flags, beside the public EMBER_ON_ERROR. */
#define OPF_NOSKIP 0x100    /* run even when an input carries an error (waits, deletes) */
#define OPF_ANYWHERE 0x200  /* run in whichever thread makes it ready (waits, deletes) */

struct ember_opr {
    atomic_int wait;
    ember_fn fn;
    void *ctx;
    ember_engine *eng;
    ember_err *err;
    int inherited; /* err came from an input, not from this op */
    const char *name;
    uint64_t seq;
    int64_t key;
    int64_t t_start;
    atomic_int dependants;
    atomic_int queued; /* sitting in a queue's heap: a new dependant makes that heap stale */
    int queue, priority, prop, flags;
    int64_t mem_bytes; /* attrs.mem_bytes: the memory-aware policy's hint */
    int nread, nwrite, nrw; /* vars = reads-only..., then writes (the first nrw were also read) */
    int *sync_done;         /* naive mode: the pusher waits for this */
    ember_var *vars[];
};

typedef struct equeue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ember_opr **heap;
    int size, cap;
    int nthreads, running, stop, idle;
    /* A stop that could not drain detaches its workers; a later start makes a new generation, and
     * the detached ones leave as soon as their op returns. alive counts both, so destroy can wait
     * until no thread touches the queue. */
    int generation, alive;
    pthread_cond_t gone;
    atomic_int hint;  /* == size, readable without the lock (spinning workers) */
    atomic_int stale; /* keys of queued ops changed (critical-path policy): rebuild before the next pop */
    pthread_t *threads;
    uint64_t npushed, nrun;
    atomic_uint_fast64_t ncontinued; /* ops a worker ran straight after the op that made them ready */
    int id;
    ember_engine *eng;
} equeue;

#define MAX_QUEUES 64
#define SPIN_YIELDS 64
#define SESSION_SLICE_NS 200000 /* a session gives its context (the GIL) back after 0.2 ms */
#define RUN_AHEAD_STALL_NS 50000000 /* a run-ahead wait gives up after 50 ms in which no op ended */
#define DRAIN_STALL_NS 1000000000     /* a drain after 1 s: one large kernel may take longer than 50 ms */

struct ember_engine {
    int naive;
    atomic_int policy;
    _Atomic(ember_key_fn) custom_key;
    atomic_int_fast64_t live_hint; /* minus the mem_bytes of every op ended (memory-aware policy) */
    atomic_int_fast64_t mem_high;  /* memory-aware threshold on live_hint */
    atomic_uint_fast64_t seq;
    atomic_int_fast64_t pending;
    atomic_int_fast64_t run_ahead; /* pushers wait above this many pending ops (0 = never) */
    atomic_int throttled;          /* pushers waiting in ember_run_ahead_wait */
    atomic_int stalled;            /* a wait saw no op end for RUN_AHEAD_STALL_NS: no waiting until pending falls */
    atomic_uint_fast64_t pushed, completed, failed, skipped, inline_runs;
    atomic_int cancelled;
    atomic_int inline_active; /* a caller holds the idle claim (ember_claim_idle) */
    atomic_int unraised;      /* errors not raised yet (ember_clear_error) nor released */
    pthread_mutex_t push_mu; /* appends of one push are atomic w.r.t. other pushers */
    pthread_mutex_t mu;      /* pending/wait_all and naive completion */
    pthread_cond_t cv;
    pthread_mutex_t err_mu;
    ember_err *live;          /* every error still referenced (for ember_clear_error) */
    ember_err **errors;
    int nerrors, cap_errors;
    int *released;
    int nreleased, cap_released;
    equeue *queues[MAX_QUEUES];
    int nqueues;
    atomic_int profiling;
    pthread_mutex_t prof_mu;
    ember_prof_record *prof;
    int nprof, cap_prof;
    atomic_int next_worker;
    ember_fn session_key;         /* ops whose fn is this run in sessions (ember_set_session) */
    void (*session_enter)(void);  /* ... between these two calls (Python ops: holding the GIL) */
    void (*session_leave)(void);
    void (*session_drop)(void *ctx); /* ... and their ctx is handed here when they end without running */
};

static _Thread_local int tl_worker = -1;
static _Thread_local int tl_inline_owner = 0;
/* A worker completing an op may keep one op that completion made ready and run it next, without
 * the queue round trip (a chain stays on one thread): only while its queue is empty, so no queued
 * op is passed over (see dispatch_all). */
static _Thread_local struct equeue *tl_queue = NULL; /* the queue this thread works for, while completing */
static _Thread_local ember_opr *tl_next = NULL;

int64_t ember_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *xrealloc_array(void *p, int *cap, int need, size_t elem) {
    if (need <= *cap) return p;
    int ncap = *cap ? *cap * 2 : 16;
    while (ncap < need) ncap *= 2;
    void *q = realloc(p, (size_t)ncap * elem);
    if (!q) abort();
    *cap = ncap;
    return q;
}

/* ----------------------------------------------------------------- errors */

static ember_err *err_new(ember_engine *e, int id) {
    ember_err *x = malloc(sizeof *x);
    if (!x) abort();
    x->id = id;
    atomic_init(&x->refs, 1);
    atomic_init(&x->cleared, 0);
    atomic_fetch_add(&e->unraised, 1);
    pthread_mutex_lock(&e->err_mu);
    x->prev = NULL;
    x->next = e->live;
    if (e->live) e->live->prev = x;
    e->live = x;
    pthread_mutex_unlock(&e->err_mu);
    return x;
}

/* An error that still counts: set and not cleared (a cleared one was raised already, as MXNet
 * clears an exception once rethrown; readers of a variable carrying it run normally). */
static int err_live(ember_err *x) { return x && !atomic_load(&x->cleared); }

static ember_err *err_ref(ember_err *x) {
    if (x) atomic_fetch_add(&x->refs, 1);
    return x;
}

static void err_unref(ember_engine *e, ember_err *x) {
    if (!x || atomic_fetch_sub(&x->refs, 1) != 1) return;
    pthread_mutex_lock(&e->err_mu);
    if (x->prev) x->prev->next = x->next; else e->live = x->next;
    if (x->next) x->next->prev = x->prev;
    if (!atomic_load(&x->cleared)) atomic_fetch_sub(&e->unraised, 1);
    e->released = xrealloc_array(e->released, &e->cap_released, e->nreleased + 1, sizeof(int));
    e->released[e->nreleased++] = x->id;
    pthread_mutex_unlock(&e->err_mu);
    free(x);
}

static void var_set_err(ember_engine *e, ember_var *v, ember_err *x) {
    ember_err *old = atomic_exchange(&v->err, err_ref(x));
    err_unref(e, old);
}

int ember_released_errors(ember_engine *e, int *buf, int cap) {
    pthread_mutex_lock(&e->err_mu);
    int n = e->nreleased < cap ? e->nreleased : cap;
    memcpy(buf, e->released, (size_t)n * sizeof(int));
    memmove(e->released, e->released + n, (size_t)(e->nreleased - n) * sizeof(int));
    e->nreleased -= n;
    pthread_mutex_unlock(&e->err_mu);
    return n;
}

/* -------------------------------------------------------------- variables */

static vblock *vblock_new(void) {
    vblock *b = calloc(1, sizeof *b);
    if (!b) abort();
    return b;
}

ember_var *ember_var_new(ember_engine *e) {
    (void)e;
    ember_var *v = calloc(1, sizeof *v);
    if (!v) abort();
    pthread_mutex_init(&v->mu, NULL);
    v->tail = vblock_new();
    atomic_init(&v->err, NULL);
    return v;
}

static void var_free(ember_engine *e, ember_var *v) {
    var_set_err(e, v, NULL);
    pthread_mutex_destroy(&v->mu);
    free(v->tail);
    free(v);
}

int ember_var_error(ember_var *v) {
    ember_err *x = atomic_load(&v->err);
    return err_live(x) ? x->id : 0;
}

void ember_clear_error(ember_engine *e, int id) {
    pthread_mutex_lock(&e->err_mu);
    for (ember_err *x = e->live; x; x = x->next)
        if (x->id == id && !atomic_exchange(&x->cleared, 1)) atomic_fetch_sub(&e->unraised, 1);
    pthread_mutex_unlock(&e->err_mu);
}

static void mark_stale(ember_opr *op);

static void count_dependant(ember_var *v) {
    if (!v->last) return;
    ember_opr *op = v->last->trigger;
    atomic_fetch_add(&op->dependants, 1);
    if (atomic_load(&op->queued)) mark_stale(op);
}

/* Returns 1 when the read may proceed now. */
static int append_read(ember_var *v, ember_opr *op) {
    pthread_mutex_lock(&v->mu);
    int ready = 0;
    if (v->pending_write == NULL) {
        v->running_reads++;
        ready = 1;
    } else {
        count_dependant(v);
        vblock *b = v->tail;
        b->trigger = op;
        b->write = 0;
        b->next = vblock_new();
        v->tail = b->next;
        v->last = b;
    }
    pthread_mutex_unlock(&v->mu);
    return ready;
}

static int append_write(ember_var *v, ember_opr *op) {
    pthread_mutex_lock(&v->mu);
    int ready = 0;
    vblock *b = v->tail;
    b->trigger = op;
    b->write = 1;
    b->next = vblock_new();
    v->tail = b->next;
    if (v->pending_write == NULL) {
        v->pending_write = b;
        if (v->running_reads == 0) {
            v->running_reads = -1;
            ready = 1;
        } else {
            count_dependant(v);
        }
    } else {
        count_dependant(v);
    }
    v->last = b;
    pthread_mutex_unlock(&v->mu);
    return ready;
}

/* Returns the op made ready, if any. */
static ember_opr *complete_read(ember_var *v) {
    ember_opr *ready = NULL;
    pthread_mutex_lock(&v->mu);
    if (--v->running_reads == 0 && v->pending_write) {
        ready = v->pending_write->trigger;
        v->running_reads = -1;
    }
    pthread_mutex_unlock(&v->mu);
    return ready;
}

/* Ops made ready by one completion: a small vector (an op may appear more than once). */
typedef struct {
    ember_opr **items;
    int n, cap;
    ember_opr *local[16];
} readyvec;

static void ready_add(readyvec *rv, ember_opr *op) {
    if (rv->n == rv->cap) {
        int ncap = rv->cap * 2;
        ember_opr **p = malloc((size_t)ncap * sizeof *p);
        if (!p) abort();
        memcpy(p, rv->items, (size_t)rv->n * sizeof *p);
        if (rv->items != rv->local) free(rv->items);
        rv->items = p;
        rv->cap = ncap;
    }
    rv->items[rv->n++] = op;
}

/* Pops the finished write; adds every op made ready to rv.
 * Frees the variable when it was marked for deletion and nothing is left. */
static void complete_write(ember_engine *e, ember_var *v, readyvec *rv) {
    pthread_mutex_lock(&v->mu);
    vblock *done = v->pending_write;
    vblock *b = done->next;
    if (v->last == done) v->last = NULL;
    free(done);
    int nreads = 0;
    while (b != v->tail && !b->write) {
        ready_add(rv, b->trigger);
        nreads++;
        vblock *nx = b->next;
        if (v->last == b) v->last = NULL;
        free(b);
        b = nx;
    }
    if (b == v->tail) {
        v->pending_write = NULL;
        v->running_reads = nreads;
    } else {
        v->pending_write = b;
        if (nreads == 0) {
            v->running_reads = -1;
            ready_add(rv, b->trigger);
        } else {
            v->running_reads = nreads;
        }
    }
    int free_now = v->to_delete && v->pending_write == NULL && v->running_reads == 0;
    pthread_mutex_unlock(&v->mu);
    if (free_now) var_free(e, v);
}

/* ----------------------------------------------------------------- queues */

static int op_before(const ember_opr *a, const ember_opr *b) {
    return a->key > b->key || (a->key == b->key && a->seq < b->seq);
}

static void heap_push(equeue *q, ember_opr *op) {
    q->heap = xrealloc_array(q->heap, &q->cap, q->size + 1, sizeof(ember_opr *));
    int i = q->size++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!op_before(op, q->heap[p])) break;
        q->heap[i] = q->heap[p];
        i = p;
    }
    q->heap[i] = op;
}

static ember_opr *heap_pop(equeue *q) {
    ember_opr *top = q->heap[0];
    ember_opr *last = q->heap[--q->size];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        const ember_opr *best = last;
        if (l < q->size && op_before(q->heap[l], best)) { m = l; best = q->heap[l]; }
        if (r < q->size && op_before(q->heap[r], best)) { m = r; }
        if (m == i) break;
        q->heap[i] = q->heap[m];
        i = m;
    }
    if (q->size > 0) q->heap[i] = last;
    return top;
}

#define REKEY_LIMIT 4096 /* above this many queued ops a stale heap is left as it is */

static int64_t policy_key(ember_engine *e, ember_opr *op);

/* Rebuild a heap whose keys changed (under the queue lock). */
static void heap_rekey(ember_engine *e, equeue *q) {
    if (q->size > REKEY_LIMIT) return;
    int n = q->size;
    for (int i = 0; i < n; i++) q->heap[i]->key = policy_key(e, q->heap[i]);
    q->size = 0;
    for (int i = 0; i < n; i++) heap_push(q, q->heap[i]);
}

/* The memory-aware policy's byte term: clamped so that * 1024 + priority cannot overflow. */
#define MEM_KEY_MAX ((int64_t)1 << 52)
#define COMM_BOOST ((int64_t)1 << 40)

static int is_comm_op(const char *name) {
    return name && (strncmp(name, "kvstore", 7) == 0 || strncmp(name, "allreduce", 9) == 0);
}

static int64_t policy_key(ember_engine *e, ember_opr *op) {
    switch (atomic_load(&e->policy)) {
    case EMBER_POLICY_MEMORY_AWARE: {
        if (atomic_load(&e->live_hint) < atomic_load(&e->mem_high)) return op->priority;
        int64_t m = op->mem_bytes;
        if (m > MEM_KEY_MAX) m = MEM_KEY_MAX;
        if (m < -MEM_KEY_MAX) m = -MEM_KEY_MAX;
        return m * 1024 + op->priority;
    }
    case EMBER_POLICY_COMM_FIRST:
        return is_comm_op(op->name) ? COMM_BOOST + op->priority : op->priority;
    case EMBER_POLICY_FIFO: return 0;
    case EMBER_POLICY_LIFO: return (int64_t)op->seq;
    case EMBER_POLICY_CRITICAL_PATH:
        return (int64_t)atomic_load(&op->dependants) * 1024 + op->priority;
    case EMBER_POLICY_CUSTOM: {
        ember_key_fn f = atomic_load(&e->custom_key);
        if (f) return f(op->name, op->priority, op->seq, atomic_load(&op->dependants), op->queue);
        return op->priority;
    }
    default: return op->priority;
    }
}

static void mark_stale(ember_opr *op) {
    ember_engine *e = op->eng;
    if (atomic_load(&e->policy) == EMBER_POLICY_CRITICAL_PATH) /* never re-key under a lock through Python */
        atomic_store(&e->queues[op->queue]->stale, 1);
}

static void execute(ember_engine *e, ember_opr *op);

static void enqueue(ember_engine *e, ember_opr *op) {
    equeue *q = e->queues[op->queue];
    op->key = policy_key(e, op); /* computed outside the queue lock: a custom key may call Python */
    pthread_mutex_lock(&q->mu);
    if (q->running == 0) {
        /* stopped (fork, exit): run where we are rather than lose the op */
        pthread_mutex_unlock(&q->mu);
        execute(e, op);
        return;
    }
    atomic_store(&op->queued, 1);
    heap_push(q, op);
    atomic_store_explicit(&q->hint, q->size, memory_order_relaxed);
    q->npushed++;
    if (q->idle > 0) pthread_cond_signal(&q->cv); /* a futex wake only when a worker sleeps */
    pthread_mutex_unlock(&q->mu);
}

/* ------------------------------------------------------------- execution */

/* One op fewer in flight: wake waiters when none is left (and the naive pusher, if any). */
static void pending_done(ember_engine *e, int *sync_done) {
    int64_t left = atomic_fetch_sub(&e->pending, 1) - 1;
    if (left == 0 || sync_done || (atomic_load_explicit(&e->throttled, memory_order_relaxed) &&
                                   left <= atomic_load_explicit(&e->run_ahead, memory_order_relaxed) / 2)) {
        pthread_mutex_lock(&e->mu);
        if (sync_done) *sync_done = 1;
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
    }
}

static void complete(ember_engine *e, ember_opr *op);

/* Async ops only start their work (a GPU stream, an MPI request) and finish later through
 * ember_complete, so, as in MXNet, they start in the thread that made them ready instead of
 * queueing behind long compute ops (as do waits, deletes and every op under NaiveEngine). */
static int runs_where_ready(ember_engine *e, const ember_opr *op) {
    return e->naive || (op->flags & OPF_ANYWHERE) || op->prop == EMBER_PROP_ASYNC;
}

static void schedule(ember_engine *e, ember_opr *op) {
    if (runs_where_ready(e, op)) execute(e, op);
    else enqueue(e, op);
}

/* Releases one dependency of each op in ops (a completion's dependants) and schedules those that
 * became ready.  In a worker (tl_queue), when the completion made exactly one op of the worker's
 * queue ready and that queue is empty, the op is kept in tl_next instead: worker_main runs it next,
 * without the queue round trip, unless something was queued meanwhile (the policy orders them). */
static void dispatch_all(ember_engine *e, ember_opr **ops, int n) {
    ember_opr *keep = NULL;
    int nready = 0;
    for (int i = 0; i < n; i++) {
        ember_opr *op = ops[i];
        if (atomic_fetch_sub(&op->wait, 1) != 1) continue;
        nready++;
        if (!keep && tl_queue && !tl_next && tl_queue->eng == e && op->queue == tl_queue->id &&
            !runs_where_ready(e, op))
            keep = op;
        else
            schedule(e, op);
    }
    if (!keep) return;
    if (nready == 1 && atomic_load_explicit(&tl_queue->hint, memory_order_relaxed) == 0) tl_next = keep;
    else enqueue(e, keep);
}

static void inherit_error(ember_opr *op) {
    if (op->err) return;
    int ncheck = op->nread + op->nrw;
    for (int i = 0; i < ncheck; i++) {
        ember_err *x = atomic_load(&op->vars[i]->err);
        if (err_live(x)) {
            op->err = err_ref(x);
            op->inherited = 1;
            return;
        }
    }
}

/* The one place that decides how an op starts, for every way one runs (worker, session, a claim by
 * its caller): skipped when an input carries an error, cancelled at shutdown, run anyway when it
 * is an EMBER_ON_ERROR op (told why through ember_op_input_failed), and its start time for the
 * profiler.  Returns 1 when fn is to run now, 0 when the op was completed here without running. */
static int op_start(ember_engine *e, ember_opr *op) {
    inherit_error(op);
    int cancelled = atomic_load(&e->cancelled) && !(op->flags & OPF_NOSKIP);
    if ((op->err || cancelled) && !(op->flags & (OPF_NOSKIP | EMBER_ON_ERROR))) {
        if (op->err) atomic_fetch_add(&e->skipped, 1); /* it inherits its input's error */
        else op->err = err_new(e, EMBER_ERR_CANCELLED);
        if (op->fn && op->fn == e->session_key && e->session_drop) e->session_drop(op->ctx);
        complete(e, op);
        return 0;
    }
    if (cancelled && !op->err) { /* an ON_ERROR op still runs, told it failed, to release what waits on it */
        op->err = err_new(e, EMBER_ERR_CANCELLED);
        op->inherited = 1;
    }
    if (atomic_load_explicit(&e->profiling, memory_order_relaxed)) op->t_start = ember_now_ns();
    return 1;
}

/* No op starts while another thread holds the idle claim (ember_claim_idle). */
static void wait_idle_claim(ember_engine *e) {
    while (atomic_load(&e->inline_active) && !tl_inline_owner) sched_yield();
}

/* Ends op (fn returned rc) in a worker: an op its completion makes ready may be kept to run next. */
static void worker_complete(equeue *q, ember_opr *op, int rc) {
    tl_queue = q;
    ember_complete(op, rc);
    tl_queue = NULL;
}

static void execute_in(ember_engine *e, equeue *q, ember_opr *op) {
    wait_idle_claim(e);
    if (!op_start(e, op)) return;
    int rc = op->fn ? op->fn(op->ctx, op) : 0;
    if (rc == EMBER_PENDING) return;
    if (q) worker_complete(q, op, rc);
    else ember_complete(op, rc);
}

static void execute(ember_engine *e, ember_opr *op) { execute_in(e, NULL, op); }

void ember_complete(ember_opr *op, int err) {
    if (err > 0 && op->err == NULL) op->err = err_new(op->eng, err);
    complete(op->eng, op);
}

int ember_op_input_failed(const ember_opr *op) { return op->err != NULL && op->inherited; }

const char *ember_op_name(const ember_opr *op) { return op->name; }

static void profile_record(ember_engine *e, ember_opr *op) {
    int64_t end = ember_now_ns();
    pthread_mutex_lock(&e->prof_mu);
    e->prof = xrealloc_array(e->prof, &e->cap_prof, e->nprof + 1, sizeof(ember_prof_record));
    ember_prof_record *r = &e->prof[e->nprof++];
    r->name = op->name;
    r->queue = op->queue;
    r->worker = tl_worker;
    r->start_ns = op->t_start ? op->t_start : end;
    r->end_ns = end;
    r->thread = (unsigned long)pthread_self();
    pthread_mutex_unlock(&e->prof_mu);
}

static void complete(ember_engine *e, ember_opr *op) {
    if (op->name && atomic_load_explicit(&e->profiling, memory_order_relaxed)) profile_record(e, op);
    if (op->mem_bytes) atomic_fetch_sub(&e->live_hint, op->mem_bytes); /* before its successors are keyed */
    ember_var **writes = op->vars + op->nread;
    for (int i = 0; i < op->nwrite; i++) var_set_err(e, writes[i], op->err);
    if (op->err && !op->inherited) {
        atomic_fetch_add(&e->failed, 1);
        pthread_mutex_lock(&e->err_mu);
        e->errors = xrealloc_array(e->errors, &e->cap_errors, e->nerrors + 1, sizeof(ember_err *));
        e->errors[e->nerrors++] = err_ref(op->err);
        pthread_mutex_unlock(&e->err_mu);
    }
    readyvec rv;
    rv.items = rv.local;
    rv.n = 0;
    rv.cap = 16;
    for (int i = 0; i < op->nread; i++) {
        ember_opr *r = complete_read(op->vars[i]);
        if (r) ready_add(&rv, r);
    }
    for (int i = 0; i < op->nwrite; i++) complete_write(e, writes[i], &rv);
    err_unref(e, op->err);
    int *sync_done = op->sync_done;
    free(op);
    atomic_fetch_add(&e->completed, 1); /* before its dependants start: a wait they end sees it counted */
    dispatch_all(e, rv.items, rv.n);
    if (rv.items != rv.local) free(rv.items);
    pending_done(e, sync_done);
}

void ember_set_session(ember_engine *e, ember_fn key, void (*enter)(void), void (*leave)(void),
                       void (*drop)(void *ctx)) {
    e->session_key = key;
    e->session_enter = enter;
    e->session_leave = leave;
    e->session_drop = drop;
}

/* Pops q's head (the caller holds q->mu). */
static ember_opr *queue_take(ember_engine *e, equeue *q) {
    if (atomic_exchange(&q->stale, 0)) heap_rekey(e, q);
    ember_opr *op = heap_pop(q);
    atomic_store_explicit(&q->hint, q->size, memory_order_relaxed);
    atomic_store(&op->queued, 0);
    q->nrun++;
    return op;
}

/* The op a completion kept for this worker (tl_next), unless ops were queued meanwhile: then it is
 * queued too and the policy orders them.  With kind != NULL only an op whose fn is kind (else it
 * stays in tl_next). */
static ember_opr *take_kept(ember_engine *e, equeue *q, ember_fn kind) {
    ember_opr *op = tl_next;
    if (!op || (kind && op->fn != kind)) return NULL;
    tl_next = NULL;
    if (atomic_load_explicit(&q->hint, memory_order_relaxed) > 0) {
        enqueue(e, op);
        return NULL;
    }
    atomic_fetch_add_explicit(&q->ncontinued, 1, memory_order_relaxed);
    return op;
}

/* A session: ops of the session's kind run one after another between one enter() and one leave()
 * (Python ops: one GIL acquisition for many), each started, run and completed as any op, so
 * every rule (op_start, profiler, dependants, the policy's order) holds as for single ops.  The
 * next op is the one a completion kept for this worker, else the queue's head if it is of the
 * kind; the session ends without one, after its time slice, or when another thread holds the idle
 * claim (its op may need what enter() took). */
static void run_session(ember_engine *e, equeue *q, ember_opr *op, int generation) {
    ember_fn kind = e->session_key;
    int64_t deadline = ember_now_ns() + SESSION_SLICE_NS;
    wait_idle_claim(e); /* never wait for a claim while holding what its op may need */
    e->session_enter();
    for (;;) {
        execute_in(e, q, op);
        if (ember_now_ns() > deadline || atomic_load(&e->inline_active)) break;
        if (tl_next) {
            op = take_kept(e, q, kind);
            if (op) continue;
            if (tl_next) break; /* an op of another kind: it runs after the session */
        }
        op = NULL;
        if (atomic_load_explicit(&q->hint, memory_order_relaxed) > 0) {
            pthread_mutex_lock(&q->mu);
            if (q->size > 0 && q->generation == generation && q->heap[0]->fn == kind) op = queue_take(e, q);
            pthread_mutex_unlock(&q->mu);
        }
        if (!op) break;
    }
    e->session_leave();
}

static void *worker_main(void *arg) {
    equeue *q = arg;
    ember_engine *e = q->eng;
    tl_worker = atomic_fetch_add(&e->next_worker, 1);
    pthread_mutex_lock(&q->mu);
    int generation = q->generation;
    pthread_mutex_unlock(&q->mu);
    for (;;) {
        /* Spin a little (yielding) before sleeping: a futex wake per op costs more than the op. */
        for (int spin = 0; spin < SPIN_YIELDS && atomic_load_explicit(&q->hint, memory_order_relaxed) == 0; spin++)
            sched_yield();
        pthread_mutex_lock(&q->mu);
        while (q->size == 0 && !q->stop && q->generation == generation) {
            q->idle++;
            pthread_cond_wait(&q->cv, &q->mu);
            q->idle--;
        }
        if (q->size == 0 || q->generation != generation) {
            if (--q->alive == 0) pthread_cond_broadcast(&q->gone);
            pthread_mutex_unlock(&q->mu);
            break;
        }
        ember_opr *op = queue_take(e, q);
        pthread_mutex_unlock(&q->mu);
        while (op) { /* then the op its completion made ready while the queue was empty, if any */
            if (e->session_enter && op->fn == e->session_key) run_session(e, q, op, generation);
            else execute_in(e, q, op);
            op = take_kept(e, q, NULL);
        }
    }
    return NULL;
}

static void queue_start(equeue *q) {
    pthread_mutex_lock(&q->mu);
    q->stop = 0;
    q->running = q->nthreads;
    q->generation++;
    q->alive += q->nthreads;
    pthread_cond_broadcast(&q->cv); /* detached workers of the last generation leave */
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nthreads; i++) pthread_create(&q->threads[i], NULL, worker_main, q);
}

static void queue_stop(equeue *q, int join) {
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    q->running = 0;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nthreads; i++) {
        if (join) pthread_join(q->threads[i], NULL);
        else pthread_detach(q->threads[i]);
    }
    if (!join) return;
    pthread_mutex_lock(&q->mu); /* workers detached by an earlier stop may still be leaving */
    while (q->alive > 0) pthread_cond_wait(&q->gone, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

int ember_queue_add(ember_engine *e, int nthreads) {
    if (e->nqueues >= MAX_QUEUES) return -1;
    equeue *q = calloc(1, sizeof *q);
    if (!q) abort();
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    pthread_cond_init(&q->gone, NULL);
    q->nthreads = nthreads < 1 ? 1 : nthreads;
    q->threads = calloc((size_t)q->nthreads, sizeof(pthread_t));
    q->eng = e;
    q->id = e->nqueues;
    queue_start(q);
    e->queues[e->nqueues] = q;
    return e->nqueues++;
}

/* ------------------------------------------------------------------- push */

static int contains(ember_var *const *vs, int n, ember_var *v) {
    for (int i = 0; i < n; i++)
        if (vs[i] == v) return 1;
    return 0;
}

/* Would every access of op start at once (ember_claim)?  Called under push_mu, after op was
 * counted in e->pending, so an idle claim taken by another thread is seen here. */
static int ready_now(ember_engine *e, const ember_opr *op) {
    if ((atomic_load(&e->inline_active) && !tl_inline_owner) || atomic_load(&e->cancelled)) return 0;
    for (int i = 0; i < op->nread + op->nwrite; i++) {
        ember_var *v = op->vars[i];
        pthread_mutex_lock(&v->mu);
        /* (with no write pending, v's error cannot change meanwhile: err_live may look at it) */
        int ok = v->pending_write == NULL && (i < op->nread || v->running_reads == 0) && !err_live(atomic_load(&v->err));
        pthread_mutex_unlock(&v->mu);
        if (!ok) return 0;
    }
    return 1;
}

/* A new op on vars (nread reads, then nwrite writes), deduplicated: its vars hold the reads that
 * are not written, then the writes, those also read first (nrw of them).  NULL on misuse. */
static ember_opr *op_new(ember_engine *e, ember_fn fn, void *ctx, ember_var *const *vars, int nread, int nwrite,
                         const ember_op_attrs *a, int private_flags) {
    if (a->queue < 0 || a->queue >= e->nqueues || nread < 0 || nwrite < 0) return NULL;
    ember_var *const *reads = vars, *const *writes = vars + nread;
    ember_opr *op = malloc(sizeof *op + (size_t)(nread + nwrite) * sizeof(ember_var *));
    if (!op) abort();
    int nw = 0, nrw = 0;
    ember_var **tmpw = op->vars + nread; /* writes are placed after the reads below */
    for (int i = 0; i < nwrite; i++)
        if (!contains(tmpw, nw, writes[i])) tmpw[nw++] = writes[i];
    for (int i = 0; i < nw; i++) { /* writes that are also read go to the front of the write section */
        if (contains(reads, nread, tmpw[i])) {
            ember_var *t = tmpw[nrw];
            tmpw[nrw] = tmpw[i];
            tmpw[i] = t;
            nrw++;
        }
    }
    int nr = 0;
    for (int i = 0; i < nread; i++)
        if (!contains(tmpw, nw, reads[i]) && !contains(op->vars, nr, reads[i])) op->vars[nr++] = reads[i];
    if (nr < nread) memmove(op->vars + nr, tmpw, (size_t)nw * sizeof(ember_var *));
    op->fn = fn;
    op->ctx = ctx;
    op->eng = e;
    op->err = NULL;
    op->inherited = 0;
    op->name = a->name;
    op->t_start = 0;
    atomic_init(&op->dependants, 0);
    atomic_init(&op->queued, 0);
    op->queue = a->queue;
    op->priority = a->priority;
    op->mem_bytes = a->mem_bytes;
    op->prop = a->prop;
    op->flags = (a->flags & EMBER_ON_ERROR) | private_flags;
    op->nread = nr;
    op->nwrite = nw;
    op->nrw = nrw;
    op->sync_done = NULL;
    atomic_init(&op->wait, nr + nw + 1);
    return op;
}

/* Appends op to its variables' queues (atomically w.r.t. other pushes); returns how many of its
 * accesses may start now.  With claim, appends nothing and returns -1 unless all of them may. */
static int op_register(ember_engine *e, ember_opr *op, int claim) {
    int nready = 0;
    pthread_mutex_lock(&e->push_mu);
    if (claim && !ready_now(e, op)) {
        /* pushes are serialized by push_mu, so readiness can only grow meanwhile */
        pthread_mutex_unlock(&e->push_mu);
        return -1;
    }
    atomic_fetch_add(&e->pushed, 1);
    op->seq = atomic_fetch_add(&e->seq, 1);
    for (int i = 0; i < op->nread; i++) nready += append_read(op->vars[i], op);
    for (int i = 0; i < op->nwrite; i++) nready += append_write(op->vars[op->nread + i], op);
    pthread_mutex_unlock(&e->push_mu);
    return nready;
}

static int push_op(ember_engine *e, ember_opr *op) {
    int done = 0;
    int naive = e->naive && !(op->flags & OPF_ANYWHERE); /* waits and deletes never block their pusher */
    if (naive) op->sync_done = &done;
    atomic_fetch_add(&e->pending, 1); /* before the inline_active check in schedule (see ember_claim_idle) */
    int nready = op_register(e, op, 0);
    /* release the dependencies already satisfied plus the pusher's own +1 in one step */
    if (atomic_fetch_sub(&op->wait, nready + 1) == nready + 1) {
        /* Under the idle claim no worker may start an op, so the claim's owner (an op running in
         * its caller that pushes ops of its own, e.g. a Custom op's forward) runs each one it
         * pushes itself, as NaiveEngine does: waiting on one inside the op then cannot hang. */
        if (tl_inline_owner) execute(e, op);
        else schedule(e, op);
    }
    if (naive) {
        pthread_mutex_lock(&e->mu);
        while (!done) pthread_cond_wait(&e->cv, &e->mu);
        pthread_mutex_unlock(&e->mu);
    }
    return 0;
}

int ember_push(ember_engine *e, ember_fn fn, void *ctx, ember_var *const *vars, int nread, int nwrite,
               const ember_op_attrs *attrs) {
    ember_opr *op = op_new(e, fn, ctx, vars, nread, nwrite, attrs, 0);
    return op ? push_op(e, op) : -2;
}

ember_opr *ember_claim(ember_engine *e, ember_var *const *vars, int nread, int nwrite, const ember_op_attrs *attrs) {
    ember_opr *op = op_new(e, NULL, NULL, vars, nread, nwrite, attrs, 0);
    if (!op) return NULL;
    atomic_fetch_add(&e->pending, 1);
    int nready = op_register(e, op, 1);
    if (nready < 0) {
        free(op);
        pending_done(e, NULL);
        return NULL;
    }
    atomic_store(&op->wait, 0); /* every access started at registration */
    /* op_start cannot skip it (no input carried an error); a shutdown that starts cancelling
     * right now ends it cancelled: then the caller runs nothing and pushes it again, also cancelled. */
    if (!op_start(e, op)) return NULL;
    atomic_fetch_add(&e->inline_runs, 1);
    return op;
}

/* ---------------------------------------------------------------- waiting */

/* A waiter is shared by the WaitForVar op and the waiting thread, which may give up before the op
 * ran (ember_wait_end after a timeout): whichever of the two lets go last frees it. */
struct ember_waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int refs;
};

/* Drop one reference; called with w->mu held, which it releases. */
static void waiter_unref_unlock(ember_waiter *w) {
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (last) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
    }
}

static int waiter_fn(void *ctx, ember_opr *op) {
    (void)op;
    ember_waiter *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cv);
    waiter_unref_unlock(w);
    return 0;
}

/* The absolute CLOCK_REALTIME time timeout_ms (>= 0) from now, for pthread_cond_timedwait. */
static struct timespec deadline_after(int timeout_ms) {
    struct timespec d;
    clock_gettime(CLOCK_REALTIME, &d);
    d.tv_sec += timeout_ms / 1000;
    d.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (d.tv_nsec >= 1000000000L) {
        d.tv_sec++;
        d.tv_nsec -= 1000000000L;
    }
    return d;
}

int ember_wait_var_now(ember_var *v) {
    pthread_mutex_lock(&v->mu);
    int idle = v->pending_write == NULL;
    pthread_mutex_unlock(&v->mu);
    return idle ? ember_var_error(v) : -1;
}

ember_waiter *ember_wait_begin(ember_engine *e, ember_var *v) {
    pthread_mutex_lock(&v->mu);
    int idle = v->pending_write == NULL;
    pthread_mutex_unlock(&v->mu);
    if (idle) return NULL;
    ember_waiter *w = malloc(sizeof *w);
    if (!w) abort();
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->done = 0;
    w->refs = 2;
    ember_var *r[1] = {v};
    static const ember_op_attrs wait_attrs = {0, 0, EMBER_PROP_NORMAL, 0, "WaitForVar", 0};
    push_op(e, op_new(e, waiter_fn, w, r, 1, 0, &wait_attrs, OPF_NOSKIP | OPF_ANYWHERE));
    return w;
}

int ember_wait_poll(ember_waiter *w, int timeout_ms) {
    if (!w) return 1;
    struct timespec deadline = {0, 0};
    if (timeout_ms >= 0) deadline = deadline_after(timeout_ms);
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&w->cv, &w->mu);
        } else if (pthread_cond_timedwait(&w->cv, &w->mu, &deadline) == ETIMEDOUT) {
            break;
        }
    }
    int done = w->done;
    pthread_mutex_unlock(&w->mu);
    return done;
}

void ember_wait_end(ember_waiter *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    waiter_unref_unlock(w);
}

int ember_wait_var(ember_engine *e, ember_var *v) {
    ember_waiter *w = ember_wait_begin(e, v);
    ember_wait_poll(w, -1);
    ember_wait_end(w);
    return ember_var_error(v);
}

static int delete_fn(void *ctx, ember_opr *op) {
    (void)op;
    ember_var *v = ctx;
    pthread_mutex_lock(&v->mu);
    v->to_delete = 1;
    pthread_mutex_unlock(&v->mu);
    return 0;
}

void ember_var_delete(ember_engine *e, ember_var *v) {
    ember_var *w[1] = {v};
    static const ember_op_attrs delete_attrs = {0, 0, EMBER_PROP_NORMAL, 0, NULL, 0};
    push_op(e, op_new(e, delete_fn, v, w, 0, 1, &delete_attrs, OPF_NOSKIP | OPF_ANYWHERE));
}

int ember_wait_all(ember_engine *e, int timeout_ms) {
    struct timespec deadline = {0, 0};
    if (timeout_ms >= 0) deadline = deadline_after(timeout_ms);
    pthread_mutex_lock(&e->mu);
    while (atomic_load(&e->pending) > 0) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&e->cv, &e->mu);
        } else if (pthread_cond_timedwait(&e->cv, &e->mu, &deadline) == ETIMEDOUT) {
            pthread_mutex_unlock(&e->mu);
            return -1;
        }
    }
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_lock(&e->err_mu);
    ember_err **errs = e->errors;
    int n = e->nerrors;
    e->errors = NULL;
    e->nerrors = e->cap_errors = 0;
    pthread_mutex_unlock(&e->err_mu);
    int id = n > 0 ? errs[0]->id : 0;
    for (int i = 0; i < n; i++) err_unref(e, errs[i]);
    free(errs);
    return id;
}

/* ------------------------------------------------------------- run-ahead */

void ember_set_run_ahead(ember_engine *e, int64_t max_pending) {
    atomic_store(&e->run_ahead, max_pending > 0 ? max_pending : 0);
    atomic_store(&e->stalled, 0);
}

int64_t ember_get_run_ahead(ember_engine *e) { return atomic_load(&e->run_ahead); }

int ember_run_ahead_over(ember_engine *e) {
    int64_t limit = atomic_load_explicit(&e->run_ahead, memory_order_relaxed);
    if (limit <= 0 || tl_worker >= 0 || tl_inline_owner) return 0; /* ops that push ops never wait */
    int64_t pending = atomic_load_explicit(&e->pending, memory_order_relaxed);
    if (atomic_load_explicit(&e->stalled, memory_order_relaxed)) {
        if (pending > limit / 2) return 0;
        atomic_store(&e->stalled, 0);
    }
    return pending > limit;
}

/* With e->mu held: wait until at most `low` ops are pending or `target` ops have ended in all, looking
 * every `poll_ms`; 1 when none ended for `stall_ns` first (an async op may wait for this very thread:
 * given up), else 0. */
static int wait_for_ends(ember_engine *e, int64_t low, uint64_t target, int poll_ms, int64_t stall_ns) {
    uint64_t seen = atomic_load(&e->completed); /* skipped ops count as completed too */
    int64_t since = ember_now_ns();
    while (atomic_load(&e->pending) > low && atomic_load(&e->completed) < target) {
        struct timespec deadline = deadline_after(poll_ms);
        pthread_cond_timedwait(&e->cv, &e->mu, &deadline);
        uint64_t now_seen = atomic_load(&e->completed);
        if (now_seen != seen) {
            seen = now_seen;
            since = ember_now_ns();
        } else if (ember_now_ns() - since >= stall_ns) {
            return 1;
        }
    }
    return 0;
}

void ember_run_ahead_wait(ember_engine *e) {
    if (!ember_run_ahead_over(e)) return;
    int64_t low = atomic_load(&e->run_ahead) / 2;
    pthread_mutex_lock(&e->mu);
    atomic_fetch_add(&e->throttled, 1);
    /* progress looked for every 10 ms; stalled: no waiting until the backlog falls below the low mark */
    if (wait_for_ends(e, low, UINT64_MAX, 10, RUN_AHEAD_STALL_NS)) atomic_store(&e->stalled, 1);
    atomic_fetch_sub(&e->throttled, 1);
    pthread_mutex_unlock(&e->mu);
}

void ember_run_ahead_drain(ember_engine *e) {
    if (tl_worker >= 0 || tl_inline_owner) return; /* ops that push ops never wait */
    int64_t pending = atomic_load(&e->pending);
    if (pending <= 0) return;
    /* as many ends as ops pending now (or none left): another thread's later pushes do not prolong it;
     * polled every 1 ms, as ends wake waiters only at 0 pending */
    uint64_t target = atomic_load(&e->completed) + (uint64_t)pending;
    pthread_mutex_lock(&e->mu);
    wait_for_ends(e, 0, target, 1, DRAIN_STALL_NS);
    pthread_mutex_unlock(&e->mu);
}

/* ------------------------------------------------------------- lifecycle */

ember_engine *ember_engine_create(int naive, int cpu_threads, int copy_threads) {
    ember_engine *e = calloc(1, sizeof *e);
    if (!e) abort();
    e->naive = naive;
    atomic_init(&e->policy, EMBER_POLICY_PRIORITY);
    atomic_init(&e->live_hint, 0);
    atomic_init(&e->mem_high, INT64_MIN);
    atomic_init(&e->run_ahead, 0);
    atomic_init(&e->throttled, 0);
    atomic_init(&e->stalled, 0);
    atomic_init(&e->custom_key, NULL);
    pthread_mutex_init(&e->push_mu, NULL);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_mutex_init(&e->err_mu, NULL);
    pthread_mutex_init(&e->prof_mu, NULL);
    ember_queue_add(e, cpu_threads);
    ember_queue_add(e, copy_threads);
    return e;
}

int ember_engine_stop(ember_engine *e, int timeout_ms) {
    int drained = ember_wait_all(e, timeout_ms) != -1;
    if (!drained) {
        atomic_store(&e->cancelled, 1); /* queued ops are dropped with EMBER_ERR_CANCELLED */
        drained = ember_wait_all(e, 200) != -1;
    }
    for (int i = 0; i < e->nqueues; i++) queue_stop(e->queues[i], drained);
    return drained ? 0 : 1;
}

void ember_engine_start(ember_engine *e) {
    atomic_store(&e->cancelled, 0);
    for (int i = 0; i < e->nqueues; i++)
        if (e->queues[i]->running == 0) queue_start(e->queues[i]);
}

void ember_engine_start_in_child(ember_engine *e) {
    /* The child has only the forking thread. A parent thread may have held one of the engine's
     * mutexes, or waited on one of its condition variables, at the fork: the child's copies would
     * then stay locked, or make a broadcast wait for waiters that do not exist here (glibc). So
     * they are made anew, before any use in the child. */
    pthread_mutex_init(&e->push_mu, NULL);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_mutex_init(&e->err_mu, NULL);
    pthread_mutex_init(&e->prof_mu, NULL);
    for (int i = 0; i < e->nqueues; i++) {
        equeue *q = e->queues[i];
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
        pthread_cond_init(&q->gone, NULL);
        q->alive = 0; /* else a later joining stop would wait for threads that only the parent has */
        q->idle = 0;
    }
    ember_engine_start(e);
}

void ember_engine_destroy(ember_engine *e) {
    int drained = ember_engine_stop(e, -1) == 0;
    if (!drained) return; /* a stuck op still references the engine: leak rather than crash */
    for (int i = 0; i < e->nqueues; i++) {
        equeue *q = e->queues[i];
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
        pthread_cond_destroy(&q->gone);
        free(q->heap);
        free(q->threads);
        free(q);
    }
    ember_wait_all(e, 0);
    free(e->errors);
    free(e->released);
    free(e->prof);
    pthread_mutex_destroy(&e->push_mu);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->err_mu);
    pthread_mutex_destroy(&e->prof_mu);
    free(e);
}

void ember_engine_set_naive(ember_engine *e, int naive) { e->naive = naive; }
int ember_engine_is_naive(ember_engine *e) { return e->naive; }

void ember_set_policy(ember_engine *e, int policy, ember_key_fn custom) {
    atomic_store(&e->custom_key, custom);
    atomic_store(&e->policy, policy);
}

void ember_set_memory_high(ember_engine *e, int64_t high) { atomic_store(&e->mem_high, high); }
int64_t ember_memory_live_hint(ember_engine *e) { return atomic_load(&e->live_hint); }

/* ---------------------------------------------------------- stats, profile */

void ember_get_stats(ember_engine *e, ember_stats *out) {
    out->pushed = atomic_load(&e->pushed);
    out->completed = atomic_load(&e->completed);
    out->failed = atomic_load(&e->failed);
    out->skipped = atomic_load(&e->skipped);
    out->inline_runs = atomic_load(&e->inline_runs);
    out->pending = atomic_load(&e->pending);
    out->nqueues = e->nqueues;
}

uint64_t ember_queue_stat(ember_engine *e, int queue, int which) {
    if (queue < 0 || queue >= e->nqueues) return 0;
    equeue *q = e->queues[queue];
    pthread_mutex_lock(&q->mu);
    uint64_t cont = atomic_load(&q->ncontinued);
    uint64_t r = which == 0 ? q->npushed + cont : which == 1 ? q->nrun + cont : (uint64_t)q->size;
    pthread_mutex_unlock(&q->mu);
    return r;
}

void ember_profile_set(ember_engine *e, int on) { atomic_store(&e->profiling, on); }

int ember_profile_fetch(ember_engine *e, ember_prof_record *buf, int cap) {
    pthread_mutex_lock(&e->prof_mu);
    int n = e->nprof < cap ? e->nprof : cap;
    memcpy(buf, e->prof, (size_t)n * sizeof *buf);
    memmove(e->prof, e->prof + n, (size_t)(e->nprof - n) * sizeof *buf);
    e->nprof -= n;
    pthread_mutex_unlock(&e->prof_mu);
    return n;
}

/* ------------------------------------------------------------- idle claim */

int ember_claim_idle(ember_engine *e) {
    if (atomic_load(&e->profiling) || atomic_load(&e->unraised) > 0) return 0;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&e->inline_active, &expected, 1)) return 0;
    if (atomic_load(&e->pending) != 0) { /* something is in flight: take the ordinary path */
        atomic_store(&e->inline_active, 0);
        return 0;
    }
    tl_inline_owner = 1;
    return 1;
}

void ember_release_idle(ember_engine *e, ember_var *const *writes, int nwrite, int err) {
    if (err > 0) {
        ember_err *x = err_new(e, err);
        for (int i = 0; i < nwrite; i++) var_set_err(e, writes[i], x);
        pthread_mutex_lock(&e->err_mu);
        e->errors = xrealloc_array(e->errors, &e->cap_errors, e->nerrors + 1, sizeof(ember_err *));
        e->errors[e->nerrors++] = x; /* the list keeps the creation reference */
        pthread_mutex_unlock(&e->err_mu);
        atomic_fetch_add(&e->failed, 1);
    }
    ember_release_idle_ok(e);
}

void ember_release_idle_ok(ember_engine *e) {
    atomic_fetch_add(&e->pushed, 1);
    atomic_fetch_add(&e->completed, 1);
    atomic_fetch_add(&e->inline_runs, 1);
    tl_inline_owner = 0;
    atomic_store(&e->inline_active, 0);
}
