/* The native collective queue (see collectives.h for the contract).
 *
 * One mutex guards the ring of issued calls and their states; the queue's thread
 * owns posting, testing and finishing, and drops the mutex around every MPI call,
 * every `check` callback and every engine completion (a completion can start
 * another collective op inline, which takes the mutex).
 */
#define _POSIX_C_SOURCE 200809L
#include "collectives.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*iallreduce4_fn)(const void *, void *, int, int, int, int, int *);
typedef int (*test4_fn)(int *, int *, void *);
typedef int (*iallreduce8_fn)(const void *, void *, int, intptr_t, intptr_t, intptr_t, intptr_t *);
typedef int (*test8_fn)(intptr_t *, int *, void *);

enum { ITEM_ISSUED, ITEM_READY, ITEM_INPUT_FAILED };

typedef struct coll_item {
    ember_coll *owner;
    ember_opr *op;        /* set when the engine runs the op */
    const char *send;     /* NULL: in place */
    char *recv;
    void *copy_to;
    int64_t count, chunk; /* elements in all, elements per request */
    int64_t nchunks, nposted, ndone;
    intptr_t dtype;
    int elem_size;
    int state;
    int settled; /* every request done, or the call failed */
    int err;     /* error id to complete the op with */
    const char *name;
} coll_item;

typedef struct {
    union { int h4; intptr_t h8; } req;
    coll_item *item;
} flight;

struct ember_coll {
    ember_engine *eng;
    ember_mpi_fns mpi;
    int window;
    int64_t chunk_bytes;
    double spin_s, timeout_s, check_every_s;
    ember_coll_check_fn check;
    void *check_ctx;

    pthread_mutex_t mu;
    pthread_cond_t wake;   /* to the thread: a call became ready, or stop */
    pthread_cond_t exited_cv;
    coll_item **ring;      /* call seq lives at ring[seq % cap] while finished <= seq < issued */
    int64_t cap, issued;
    _Atomic int64_t finished;
    int stopping, exited, idle;
    pthread_t thread;

    /* the thread's own */
    int64_t post_seq;      /* the next call to post */
    flight *flights;       /* FIFO of requests in flight, window long */
    int head, nflight;
    int failed;
    _Atomic int max_in_flight;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* dlsym-style addresses to function pointers (POSIX guarantees the round trip) */
static void *fn_of(void *addr, size_t size, void *out) {
    memcpy(out, &addr, size);
    return out;
}

static int post(ember_coll *c, coll_item *it, flight *f) {
    int64_t first = it->nposted * it->chunk;
    int64_t n = it->count - first < it->chunk ? it->count - first : it->chunk;
    const void *send = it->send ? it->send + first * it->elem_size : (const void *)c->mpi.in_place;
    void *recv = it->recv + first * it->elem_size;
    if (c->mpi.handle_size == 4) {
        iallreduce4_fn fn;
        fn_of(c->mpi.iallreduce, sizeof fn, &fn);
        return fn(send, recv, (int)n, (int)it->dtype, (int)c->mpi.op_sum, (int)c->mpi.comm, &f->req.h4);
    }
    iallreduce8_fn fn;
    fn_of(c->mpi.iallreduce, sizeof fn, &fn);
    return fn(send, recv, (int)n, it->dtype, c->mpi.op_sum, c->mpi.comm, &f->req.h8);
}

static int test(ember_coll *c, flight *f, int *flag) {
    _Alignas(16) char status[256]; /* larger than any MPI_Status */
    if (c->mpi.handle_size == 4) {
        test4_fn fn;
        fn_of(c->mpi.test, sizeof fn, &fn);
        return fn(&f->req.h4, flag, status);
    }
    test8_fn fn;
    fn_of(c->mpi.test, sizeof fn, &fn);
    return fn(&f->req.h8, flag, status);
}

/* Asks the owner for an error id (mutex held on entry and exit, dropped meanwhile). */
static int ask(ember_coll *c, const char *name, int why, int code) {
    pthread_mutex_unlock(&c->mu);
    int eid = c->check ? c->check(c->check_ctx, name, why, code) : 0;
    pthread_mutex_lock(&c->mu);
    return eid;
}

/* A fatal failure of `culprit`: it fails with `eid` (0: ask the owner, giving why and code), the
 * requests in flight are abandoned (their calls fail too) and every later call fails when its
 * turn comes. */
static void fail_all(ember_coll *c, coll_item *culprit, int eid, int why, int code) {
    c->failed = 1;
    if (eid <= 0) eid = ask(c, culprit->name, why, code);
    culprit->err = eid > 0 ? eid : EMBER_ERR_CANCELLED;
    culprit->settled = 1;
    for (int i = 0; i < c->nflight; i++) {
        coll_item *it = c->flights[(c->head + i) % c->window].item;
        if (!it->settled) {
            eid = ask(c, it->name, EMBER_COLL_STOPPED, 0);
            it->err = eid > 0 ? eid : EMBER_ERR_CANCELLED;
            it->settled = 1;
        }
    }
    c->nflight = 0;
    c->head = 0;
}

/* Posts calls in sequence order while the window has room.  Returns 1 if anything changed. */
static int post_ready(ember_coll *c, double *last_progress) {
    int changed = 0;
    while (c->post_seq < c->issued) {
        coll_item *it = c->ring[c->post_seq % c->cap];
        if (it->settled) {
            c->post_seq++;
            changed = 1;
            continue;
        }
        if (it->state == ITEM_ISSUED) break;
        if (c->failed) {
            if (it->state != ITEM_INPUT_FAILED) { /* (a failed input keeps its own error) */
                int eid = ask(c, it->name, EMBER_COLL_STOPPED, 0);
                it->err = eid > 0 ? eid : EMBER_ERR_CANCELLED;
            }
            it->settled = 1;
            continue;
        }
        if (it->state == ITEM_INPUT_FAILED) {
            /* this rank cannot take part: the op keeps its input's error, later calls fail */
            c->failed = 1;
            (void)ask(c, it->name, EMBER_COLL_INPUT_FAILED, 0);
            it->settled = 1;
            continue;
        }
        if (c->nflight >= c->window) break;
        flight *f = &c->flights[(c->head + c->nflight) % c->window];
        f->item = it;
        pthread_mutex_unlock(&c->mu);
        int rc = post(c, it, f);
        pthread_mutex_lock(&c->mu);
        changed = 1;
        if (rc != 0) {
            fail_all(c, it, 0, EMBER_COLL_MPI_ERROR, rc);
            continue;
        }
        it->nposted++;
        c->nflight++;
        if (c->nflight > atomic_load(&c->max_in_flight)) atomic_store(&c->max_in_flight, c->nflight);
        *last_progress = now_s();
        if (it->nposted == it->nchunks) c->post_seq++;
    }
    return changed;
}

/* Finishes settled calls at the head of the sequence.  Returns 1 if any finished. */
static int finish_settled(ember_coll *c) {
    int any = 0;
    for (;;) {
        int64_t seq = atomic_load(&c->finished);
        if (seq >= c->post_seq) break;
        coll_item *it = c->ring[seq % c->cap];
        if (!it->settled) break;
        c->ring[seq % c->cap] = NULL;
        pthread_mutex_unlock(&c->mu);
        if (it->err == 0 && it->state == ITEM_READY && it->copy_to)
            memcpy(it->copy_to, it->recv, (size_t)(it->count * it->elem_size));
        ember_complete(it->op, it->err);
        free(it);
        pthread_mutex_lock(&c->mu);
        atomic_store(&c->finished, seq + 1);
        any = 1;
    }
    return any;
}

/* Tests the oldest request once (mutex dropped); backs off and checks for peers between tests. */
static void test_oldest(ember_coll *c, double *last_progress, double *last_check, int *spins) {
    flight *f = &c->flights[c->head];
    coll_item *it = f->item;
    pthread_mutex_unlock(&c->mu);
    int flag = 0;
    int rc = test(c, f, &flag);
    pthread_mutex_lock(&c->mu);
    if (rc != 0) {
        fail_all(c, it, 0, EMBER_COLL_MPI_ERROR, rc);
        return;
    }
    double t = now_s();
    if (flag) {
        c->head = (c->head + 1) % c->window;
        c->nflight--;
        if (++it->ndone == it->nchunks) it->settled = 1;
        *last_progress = t;
        *spins = 0;
        return;
    }
    double waited = t - *last_progress;
    if (waited > c->timeout_s) {
        fail_all(c, it, 0, EMBER_COLL_TIMEOUT, 0);
        return;
    }
    if (waited > c->check_every_s && t - *last_check > c->check_every_s) {
        *last_check = t;
        int eid = ask(c, it->name, EMBER_COLL_WAITING, 0);
        if (eid > 0) { /* the owner found the reason (a peer reported its failure) */
            fail_all(c, it, eid, EMBER_COLL_WAITING, 0);
            return;
        }
    }
    pthread_mutex_unlock(&c->mu);
    /* MPI progresses only inside MPI calls: keep testing, yielding the core, for spin_s; then
     * back off to short sleeps so a stalled peer does not cost a core */
    if (waited < c->spin_s) {
        sched_yield();
    } else {
        ++*spins;
        long ns = 1000L * (*spins < 1000 ? *spins : 1000);
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&c->mu);
}

static void *coll_main(void *arg) {
    ember_coll *c = arg;
    double last_progress = now_s(), last_check = 0.0;
    int spins = 0;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        int changed = post_ready(c, &last_progress);
        changed |= finish_settled(c);
        if (changed) continue;
        if (c->nflight > 0) {
            test_oldest(c, &last_progress, &last_check, &spins);
            continue;
        }
        if (c->stopping && atomic_load(&c->finished) == c->issued) break;
        c->idle = 1;
        pthread_cond_wait(&c->wake, &c->mu);
        c->idle = 0;
        last_progress = now_s();
    }
    c->exited = 1;
    pthread_cond_broadcast(&c->exited_cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

ember_coll *ember_coll_create(ember_engine *e, const ember_mpi_fns *mpi, int window, int64_t chunk_bytes,
                              double spin_s, double timeout_s, double check_every_s,
                              ember_coll_check_fn check, void *check_ctx) {
    if (!e || !mpi || !mpi->iallreduce || !mpi->test || (mpi->handle_size != 4 && mpi->handle_size != 8) ||
        window < 1 || chunk_bytes < 1 || spin_s < 0 || timeout_s <= 0 || check_every_s <= 0)
        return NULL;
    ember_coll *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->eng = e;
    c->mpi = *mpi;
    c->window = window;
    c->chunk_bytes = chunk_bytes;
    c->spin_s = spin_s;
    c->timeout_s = timeout_s;
    c->check_every_s = check_every_s;
    c->check = check;
    c->check_ctx = check_ctx;
    c->cap = 64;
    c->ring = calloc((size_t)c->cap, sizeof *c->ring);
    c->flights = calloc((size_t)window, sizeof *c->flights);
    atomic_init(&c->finished, 0);
    atomic_init(&c->max_in_flight, 0);
    if (!c->ring || !c->flights) goto fail;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->wake, NULL);
    pthread_cond_init(&c->exited_cv, NULL);
    if (pthread_create(&c->thread, NULL, coll_main, c) != 0) {
        pthread_cond_destroy(&c->exited_cv);
        pthread_cond_destroy(&c->wake);
        pthread_mutex_destroy(&c->mu);
        goto fail;
    }
    return c;
fail:
    free(c->ring);
    free(c->flights);
    free(c);
    return NULL;
}

static int coll_op(void *ctx, ember_opr *op) {
    coll_item *it = ctx;
    ember_coll *c = it->owner;
    pthread_mutex_lock(&c->mu);
    it->op = op;
    it->state = ember_op_input_failed(op) ? ITEM_INPUT_FAILED : ITEM_READY;
    if (c->idle) pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
    return EMBER_PENDING;
}

/* Grows the ring so that one more call fits (mutex held). */
static int ring_reserve(ember_coll *c) {
    int64_t first = atomic_load(&c->finished);
    if (c->issued - first < c->cap) return 0;
    int64_t cap = c->cap * 2;
    coll_item **ring = calloc((size_t)cap, sizeof *ring);
    if (!ring) return -1;
    for (int64_t s = first; s < c->issued; s++) ring[s % cap] = c->ring[s % c->cap];
    free(c->ring);
    c->ring = ring;
    c->cap = cap;
    return 0;
}

int64_t ember_coll_allreduce(ember_coll *c, const void *send, void *recv, int64_t count, intptr_t dtype,
                             int elem_size, void *copy_to, ember_var *const *reads, int nread,
                             ember_var *const *writes, int nwrite, int priority, const char *name) {
    if (!c || !recv || count < 0 || elem_size < 1 || nread < 0 || nwrite < 0) return -2;
    coll_item *it = calloc(1, sizeof *it);
    if (!it) return -2;
    it->owner = c;
    it->send = send;
    it->recv = recv;
    it->copy_to = copy_to;
    it->count = count;
    int64_t chunk = c->chunk_bytes / elem_size;
    if (chunk < 1) chunk = 1;
    if (chunk > INT_MAX) chunk = INT_MAX;
    it->chunk = chunk;
    it->nchunks = count == 0 ? 1 : (count + chunk - 1) / chunk;
    it->dtype = dtype;
    it->elem_size = elem_size;
    it->state = ITEM_ISSUED;
    it->name = name;
    pthread_mutex_lock(&c->mu);
    if (c->stopping || ring_reserve(c) != 0) {
        int stopped = c->stopping;
        pthread_mutex_unlock(&c->mu);
        free(it);
        return stopped ? -1 : -2;
    }
    int64_t seq = c->issued++;
    c->ring[seq % c->cap] = it;
    pthread_mutex_unlock(&c->mu);
    /* Outside the mutex: the op may start at once, in this thread.  The push cannot be refused:
     * the engine only refuses bad queue ids and negative counts, checked above. */
    ember_var *local[16], **vars = nread + nwrite <= 16 ? local : malloc((size_t)(nread + nwrite) * sizeof *vars);
    if (!vars) abort();
    for (int i = 0; i < nread; i++) vars[i] = reads[i];
    for (int i = 0; i < nwrite; i++) vars[nread + i] = writes[i];
    const ember_op_attrs attrs = {0, priority, EMBER_PROP_ASYNC, EMBER_ON_ERROR, name, 0};
    (void)ember_push(c->eng, coll_op, it, vars, nread, nwrite, &attrs);
    if (vars != local) free(vars);
    return seq;
}

int64_t ember_coll_finished(ember_coll *c) { return atomic_load(&c->finished); }

int ember_coll_max_in_flight(ember_coll *c) { return atomic_load(&c->max_in_flight); }

int ember_coll_stop(ember_coll *c, int timeout_ms) {
    pthread_mutex_lock(&c->mu);
    c->stopping = 1;
    pthread_cond_signal(&c->wake);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (timeout_ms >= 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    while (!c->exited) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&c->exited_cv, &c->mu);
        } else if (pthread_cond_timedwait(&c->exited_cv, &c->mu, &until) == ETIMEDOUT) {
            break;
        }
    }
    int done = c->exited;
    pthread_mutex_unlock(&c->mu);
    return done ? 0 : -1;
}

void ember_coll_destroy(ember_coll *c) {
    if (!c) return;
    ember_coll_stop(c, -1); /* (returns at once after a successful stop) */
    pthread_join(c->thread, NULL);
    pthread_cond_destroy(&c->exited_cv);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->mu);
    free(c->ring);
    free(c->flights);
    free(c);
}
