/* Stress test of the native collective queue (collectives.c) over a FAKE MPI, run under ASan and
 * valgrind by `make memcheck`.  Usage: collectives_test [ncalls [seed]]
 *
 * The fake models one rank of a 2-rank job whose peer contributes the same values: a request
 * completes after a random number (0..K) of MPI_Test calls and then recv[i] = 2 * send[i] (or
 * recv[i] *= 2 in place).  It logs every post (send, recv, count, dtype) and counts requests in
 * flight, so the test checks:
 *   - ordering: calls are posted strictly in issue order (even when their engine ops become ready
 *     in another order: slow producer ops, a gated first call), chunks in offset order;
 *   - values: recv and copy_to hold the sums, in place and send/recv, float and double, counts
 *     that are not multiples of the chunk, count 0, calls chained on earlier calls' results,
 *     both handle sizes (int handles; intptr_t handles with high bits set);
 *   - the window (1, 2, 4): the fake's count and ember_coll_max_in_flight never exceed it;
 *   - engine ordering: an op pushed after a call that reads its recv var sees the result;
 *   - failures: an MPI error from iallreduce or test, a request that never completes (timeout,
 *     or `check` failing it while WAITING), an input var carrying an engine error; the error ids
 *     each op ends with, and which `why` `check` was asked for each;
 *   - lifecycle: stop/destroy, issuing after stop, stop with a call whose op never became ready,
 *     bad arguments;
 * on a threaded engine (2 workers) and, briefly, a naive one.  Exits 0 on success; otherwise prints
 * the first failure and exits nonzero (a watchdog turns a hang into a failure naming the phase).
 */
#define _POSIX_C_SOURCE 200809L
#include "collectives.h"
#include "engine.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A plain op (cpu queue, priority 0) reading nr variables and writing nw. */
static int push_plain(ember_engine *e, ember_fn fn, void *ctx, ember_var *const *reads, int nr,
                      ember_var *const *writes, int nw, const char *name) {
    ember_var *vars[8];
    if (nr + nw > 8) return -2;
    for (int i = 0; i < nr; i++) vars[i] = reads[i];
    for (int i = 0; i < nw; i++) vars[nr + i] = writes[i];
    const ember_op_attrs attrs = {0, 0, EMBER_PROP_NORMAL, 0, name, 0};
    return ember_push(e, fn, ctx, vars, nr, nw, &attrs);
}

/* ------------------------------------------------------------------ failing */

#define FAIL(...)                                                                      \
    do {                                                                               \
        fprintf(stderr, "collectives_test FAILED at %s:%d: ", __FILE__, __LINE__);     \
        fprintf(stderr, __VA_ARGS__);                                                  \
        fputc('\n', stderr);                                                           \
        _exit(1);                                                                      \
    } while (0)
#define CHECK(cond, ...)                 \
    do {                                 \
        if (!(cond)) FAIL(__VA_ARGS__);  \
    } while (0)

/* failures seen in other threads (engine ops, the fake MPI, `check`): the first message is kept */
static atomic_int g_async_errors;
static char g_async_msg[512];
static pthread_mutex_t g_async_mu = PTHREAD_MUTEX_INITIALIZER;

static void async_fail(const char *fmt, ...) {
    pthread_mutex_lock(&g_async_mu);
    if (atomic_fetch_add(&g_async_errors, 1) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_async_msg, sizeof g_async_msg, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&g_async_mu);
}

#define CHECK_ASYNC(where)                                                                      \
    CHECK(atomic_load(&g_async_errors) == 0, "%s: %d error(s) in other threads, first: %s", where, \
          atomic_load(&g_async_errors), g_async_msg)

/* A watchdog: a hang (a lost wake-up, a request never tested) fails the run with the phase it hung in. */
#define WATCHDOG_S 60
static _Atomic(const char *) g_phase = "start";
static pthread_mutex_t g_dog_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_dog_cv = PTHREAD_COND_INITIALIZER;
static int g_dog_done;

static void *watchdog(void *arg) {
    (void)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WATCHDOG_S;
    pthread_mutex_lock(&g_dog_mu);
    while (!g_dog_done)
        if (pthread_cond_timedwait(&g_dog_cv, &g_dog_mu, &until) != 0 && !g_dog_done) {
            fprintf(stderr, "collectives_test FAILED: hung for %d s in %s (%d error(s) in other threads%s%s)\n",
                    WATCHDOG_S, atomic_load(&g_phase), atomic_load(&g_async_errors),
                    atomic_load(&g_async_errors) ? ", first: " : "", g_async_msg);
            _exit(3);
        }
    pthread_mutex_unlock(&g_dog_mu);
    return NULL;
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000L, (us % 1000000L) * 1000L};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ fake MPI */

#define K_TESTS 3 /* a request completes after 0..K_TESTS unsuccessful tests */

/* MPICH-like int handles */
#define COMM4 0x44000000
#define SUM4 0x58000003
#define FLOAT4 0x4c00040a
#define DOUBLE4 0x4c00080b
#define INPLACE4 (-1)
/* Open MPI-like pointer handles: high bits set, so a truncation to int shows */
#if INTPTR_MAX > INT32_MAX
#define HIGH8 ((intptr_t)0x5a00000000000000LL)
#else
#define HIGH8 ((intptr_t)0x40000000)
#endif
#define COMM8 (HIGH8 | 0x1010)
#define SUM8 (HIGH8 | 0x2020)
#define FLOAT8 (HIGH8 | 0x3030)
#define DOUBLE8 (HIGH8 | 0x4040)
#define INPLACE8 ((intptr_t)1)
#define REQ8_BASE (HIGH8 | 0x100000)

typedef struct {
    int used;
    int remaining; /* unsuccessful tests left; -1: never completes */
    const void *send;
    void *recv;
    int count, dbl;
} fake_req;

typedef struct {
    const void *send;
    void *recv;
    int count;
    intptr_t dtype;
} post_rec;

static struct {
    pthread_mutex_t mu;
    int hs, window;
    uint64_t rng;
    fake_req *reqs;
    int nreqs;
    int in_flight, max_in_flight;
    post_rec *log;
    int nlog, caplog;
    int64_t tests;
    /* failure injection (by recv pointer of a request) */
    const void *fail_post_recv;
    int fail_post_code;
    const void *fail_test_recv;
    int fail_test_code;
    const void *stuck_recv;
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

static intptr_t f_comm(void) { return F.hs == 4 ? COMM4 : COMM8; }
static intptr_t f_sum(void) { return F.hs == 4 ? SUM4 : SUM8; }
static intptr_t f_inplace(void) { return F.hs == 4 ? INPLACE4 : INPLACE8; }
static intptr_t f_dtype(int dbl) { return F.hs == 4 ? (dbl ? DOUBLE4 : FLOAT4) : (dbl ? DOUBLE8 : FLOAT8); }

static void fake_reset(int hs, int window, uint64_t seed) {
    pthread_mutex_lock(&F.mu);
    free(F.reqs);
    free(F.log);
    F.reqs = NULL;
    F.log = NULL;
    F.nreqs = F.nlog = F.caplog = 0;
    F.hs = hs;
    F.window = window;
    F.rng = seed;
    F.in_flight = F.max_in_flight = 0;
    F.tests = 0;
    F.fail_post_recv = F.fail_test_recv = F.stuck_recv = NULL;
    F.fail_post_code = F.fail_test_code = 0;
    pthread_mutex_unlock(&F.mu);
}

static int fake_nlog(void) {
    pthread_mutex_lock(&F.mu);
    int n = F.nlog;
    pthread_mutex_unlock(&F.mu);
    return n;
}

static int fake_post(const void *send, void *recv, int count, intptr_t dtype, intptr_t op, intptr_t comm,
                     intptr_t *handle) {
    pthread_mutex_lock(&F.mu);
    if (comm != f_comm()) async_fail("iallreduce: comm %jx, expected %jx", (intmax_t)comm, (intmax_t)f_comm());
    if (op != f_sum()) async_fail("iallreduce: op %jx, expected %jx", (intmax_t)op, (intmax_t)f_sum());
    if (dtype != f_dtype(0) && dtype != f_dtype(1)) async_fail("iallreduce: unknown dtype %jx", (intmax_t)dtype);
    if (count < 0 || !recv) async_fail("iallreduce: count %d recv %p", count, recv);
    if (F.nlog == F.caplog) {
        F.caplog = F.caplog ? 2 * F.caplog : 256;
        F.log = realloc(F.log, (size_t)F.caplog * sizeof *F.log);
        if (!F.log) abort();
    }
    F.log[F.nlog++] = (post_rec){send, recv, count, dtype};
    if (F.fail_post_recv && recv == F.fail_post_recv) {
        pthread_mutex_unlock(&F.mu);
        return F.fail_post_code;
    }
    int slot = 0;
    while (slot < F.nreqs && F.reqs[slot].used) slot++;
    if (slot == F.nreqs) {
        F.reqs = realloc(F.reqs, (size_t)(F.nreqs + 1) * sizeof *F.reqs);
        if (!F.reqs) abort();
        F.nreqs++;
    }
    fake_req *r = &F.reqs[slot];
    r->used = 1;
    r->remaining = (F.stuck_recv && recv == F.stuck_recv) ? -1 : (int)(splitmix(&F.rng) % (K_TESTS + 1));
    r->send = send == (const void *)f_inplace() ? NULL : send;
    r->recv = recv;
    r->count = count;
    r->dbl = dtype == f_dtype(1);
    if (++F.in_flight > F.max_in_flight) F.max_in_flight = F.in_flight;
    if (F.in_flight > F.window) async_fail("fake: %d requests in flight, window %d", F.in_flight, F.window);
    *handle = F.hs == 4 ? (intptr_t)(slot + 1) : REQ8_BASE + (intptr_t)slot * 16;
    pthread_mutex_unlock(&F.mu);
    return 0;
}

static int fake_test(intptr_t handle, int *flag) {
    pthread_mutex_lock(&F.mu);
    F.tests++;
    intptr_t slot = F.hs == 4 ? handle - 1 : (handle - REQ8_BASE) / 16;
    if (slot < 0 || slot >= F.nreqs || !F.reqs[slot].used ||
        (F.hs == 8 && (handle - REQ8_BASE) % 16 != 0)) {
        async_fail("test: bad request handle %jx", (intmax_t)handle);
        *flag = 0;
        pthread_mutex_unlock(&F.mu);
        return 0;
    }
    fake_req *r = &F.reqs[slot];
    if (F.fail_test_recv && r->recv == F.fail_test_recv) {
        *flag = 0;
        pthread_mutex_unlock(&F.mu);
        return F.fail_test_code;
    }
    if (r->remaining != 0) {
        if (r->remaining > 0) r->remaining--;
        *flag = 0;
        pthread_mutex_unlock(&F.mu);
        return 0;
    }
    for (int i = 0; i < r->count; i++) {
        if (r->dbl) {
            double *d = r->recv;
            d[i] = 2.0 * (r->send ? ((const double *)r->send)[i] : d[i]);
        } else {
            float *d = r->recv;
            d[i] = 2.0f * (r->send ? ((const float *)r->send)[i] : d[i]);
        }
    }
    r->used = 0;
    F.in_flight--;
    *flag = 1;
    pthread_mutex_unlock(&F.mu);
    return 0;
}

static int fake_iallreduce4(const void *send, void *recv, int count, int dtype, int op, int comm, int *req) {
    intptr_t h = 0;
    int rc = fake_post(send, recv, count, dtype, op, comm, &h);
    if (rc == 0) *req = (int)h;
    return rc;
}

static int fake_test4(int *req, int *flag, void *status) {
    (void)status;
    int rc = fake_test(*req, flag);
    if (rc == 0 && *flag) *req = 0; /* MPI_REQUEST_NULL */
    return rc;
}

static int fake_iallreduce8(const void *send, void *recv, int count, intptr_t dtype, intptr_t op, intptr_t comm,
                            intptr_t *req) {
    intptr_t h = 0;
    int rc = fake_post(send, recv, count, dtype, op, comm, &h);
    if (rc == 0) *req = h;
    return rc;
}

static int fake_test8(intptr_t *req, int *flag, void *status) {
    (void)status;
    int rc = fake_test(*req, flag);
    if (rc == 0 && *flag) *req = 0;
    return rc;
}

/* function pointers as the void * addresses that dlsym would give (the round trip POSIX allows) */
typedef int (*ia4_t)(const void *, void *, int, int, int, int, int *);
typedef int (*t4_t)(int *, int *, void *);
typedef int (*ia8_t)(const void *, void *, int, intptr_t, intptr_t, intptr_t, intptr_t *);
typedef int (*t8_t)(intptr_t *, int *, void *);
_Static_assert(sizeof(ia4_t) == sizeof(void *), "function and data pointers differ in size");

static ember_mpi_fns fake_fns(int hs) {
    ember_mpi_fns m;
    memset(&m, 0, sizeof m);
    if (hs == 4) {
        ia4_t ia = fake_iallreduce4;
        t4_t t = fake_test4;
        memcpy(&m.iallreduce, &ia, sizeof ia);
        memcpy(&m.test, &t, sizeof t);
        m.comm = COMM4;
        m.op_sum = SUM4;
        m.in_place = INPLACE4;
    } else {
        ia8_t ia = fake_iallreduce8;
        t8_t t = fake_test8;
        memcpy(&m.iallreduce, &ia, sizeof ia);
        memcpy(&m.test, &t, sizeof t);
        m.comm = COMM8;
        m.op_sum = SUM8;
        m.in_place = INPLACE8;
    }
    m.handle_size = hs;
    return m;
}

/* ------------------------------------------------------------------ check callback */

typedef struct {
    int id, why, code;
    const char *name;
} check_rec;

typedef struct {
    pthread_mutex_t mu;
    int next_id;
    check_rec *recs;
    int n, cap;
    int fail_waiting_after; /* > 0: the n-th WAITING gets an id (fails the call) */
    int nwaiting;
    int forbid; /* the random phase: no call may be asked about */
} checker;

static void checker_init(checker *k, int fail_waiting_after) {
    memset(k, 0, sizeof *k);
    pthread_mutex_init(&k->mu, NULL);
    k->next_id = 1000;
    k->fail_waiting_after = fail_waiting_after;
}

static void checker_free(checker *k) {
    free(k->recs);
    pthread_mutex_destroy(&k->mu);
}

static int check_cb(void *ctx, const char *name, int why, int code) {
    checker *k = ctx;
    pthread_mutex_lock(&k->mu);
    if (k->forbid) async_fail("check called in the random phase: name %s why %d code %d", name, why, code);
    int id = 0;
    if (why != EMBER_COLL_WAITING || (k->fail_waiting_after > 0 && ++k->nwaiting == k->fail_waiting_after))
        id = k->next_id++;
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 64;
        k->recs = realloc(k->recs, (size_t)k->cap * sizeof *k->recs);
        if (!k->recs) abort();
    }
    k->recs[k->n++] = (check_rec){id, why, code, name};
    pthread_mutex_unlock(&k->mu);
    return id;
}

/* The record of the id `check` issued (NULL if it issued none such). */
static const check_rec *checker_find(checker *k, int id) {
    for (int i = 0; i < k->n; i++)
        if (k->recs[i].id == id && id != 0) return &k->recs[i];
    return NULL;
}

static int checker_count(checker *k, const char *name, int why) {
    int n = 0;
    for (int i = 0; i < k->n; i++)
        if (k->recs[i].why == why && (!name || strcmp(k->recs[i].name, name) == 0)) n++;
    return n;
}

/* ------------------------------------------------------------------ calls */

typedef struct call call;
struct call {
    int idx, dbl, es, count, in_place, has_copy, depth;
    call *src; /* chained: its send is src's recv */
    int producer; /* 0: values filled before the push, 1: a fast op, 2: a slow op */
    int delay_us;
    char *send, *recv, *copy;
    double *orig, *expect;
    ember_var *vsend, *vrecv, *vcopy;
    int64_t seq;
    int done_order; /* when its producer finished */
    char name[32];
};

static atomic_int g_prod_counter;

static double get(const void *buf, int dbl, int i) {
    return dbl ? ((const double *)buf)[i] : (double)((const float *)buf)[i];
}

static void set(void *buf, int dbl, int i, double v) {
    if (dbl) ((double *)buf)[i] = v;
    else ((float *)buf)[i] = (float)v;
}

#define GUARD (-12345.0)
#define GARBAGE (-7.0)

static char *alloc_buf(const call *cl, double fill) {
    char *b = malloc((size_t)(cl->count + 1) * (size_t)cl->es);
    if (!b) abort();
    for (int i = 0; i < cl->count; i++) set(b, cl->dbl, i, fill);
    set(b, cl->dbl, cl->count, GUARD);
    return b;
}

static void fill_input(call *cl) {
    char *dst = cl->in_place ? cl->recv : cl->send;
    for (int i = 0; i < cl->count; i++) set(dst, cl->dbl, i, cl->orig[i]);
}

/* producer op: writes the value to reduce (vsend, or vrecv in place) */
static int produce_op(void *ctx, ember_opr *op) {
    (void)op;
    call *cl = ctx;
    if (cl->delay_us > 0) sleep_us(cl->delay_us);
    fill_input(cl);
    cl->done_order = atomic_fetch_add(&g_prod_counter, 1);
    return 0;
}

/* Returns a description of the first wrong value, or NULL. */
static const char *verify_buf(const call *cl, const char *buf, int *at) {
    for (int i = 0; i < cl->count; i++)
        if (get(buf, cl->dbl, i) != cl->expect[i]) {
            *at = i;
            return "wrong sum";
        }
    *at = cl->count;
    if (get(buf, cl->dbl, cl->count) != GUARD) return "guard element overwritten";
    return NULL;
}

/* consumer op: pushed after the call, reads its recv (and copy_to) vars */
static int consume_op(void *ctx, ember_opr *op) {
    (void)op;
    call *cl = ctx;
    int at = 0;
    const char *why = verify_buf(cl, cl->recv, &at);
    if (why) {
        async_fail("consumer of %s (count %d dbl %d in_place %d): recv: %s at %d: %g != %g", cl->name, cl->count,
                   cl->dbl, cl->in_place, why, at, at < cl->count ? get(cl->recv, cl->dbl, at) : 0.0,
                   at < cl->count ? cl->expect[at] : 0.0);
        return 0;
    }
    if (cl->copy && (why = verify_buf(cl, cl->copy, &at)) != NULL)
        async_fail("consumer of %s: copy_to: %s at %d", cl->name, why, at);
    return 0;
}

static void call_free(ember_engine *e, call *cl) {
    if (cl->vsend) ember_var_delete(e, cl->vsend);
    if (cl->vrecv) ember_var_delete(e, cl->vrecv);
    if (cl->vcopy) ember_var_delete(e, cl->vcopy);
    if (!cl->src) free(cl->send);
    free(cl->recv);
    free(cl->copy);
    free(cl->orig);
    free(cl->expect);
}

/* ember_wait_all(e, -1), failing at once on an error seen in another thread (a broken window can
 * corrupt the queue's state and hang it). */
static int wait_all_checked(ember_engine *e, const char *what) {
    for (;;) {
        int rc = ember_wait_all(e, 50);
        CHECK_ASYNC(what);
        if (rc != -1) return rc;
    }
}

/* Issues a call as set up (vars made here); returns the issue result. */
static int64_t issue(ember_coll *c, call *cl, int priority) {
    ember_var *reads[2], *writes[2];
    int nr = 0, nw = 0;
    if (cl->src) reads[nr++] = cl->src->vrecv;
    else if (cl->vsend) reads[nr++] = cl->vsend;
    writes[nw++] = cl->vrecv;
    if (cl->vcopy) writes[nw++] = cl->vcopy;
    return ember_coll_allreduce(c, cl->in_place ? NULL : cl->send, cl->recv, cl->count, f_dtype(cl->dbl), cl->es,
                                cl->copy, reads, nr, writes, nw, priority, cl->name);
}

/* A plain call of `count` floats or doubles, input filled now, own vars. */
static void simple_call(ember_engine *e, call *cl, int idx, int count, int dbl, int in_place, int has_copy) {
    memset(cl, 0, sizeof *cl);
    cl->idx = idx;
    cl->dbl = dbl;
    cl->es = dbl ? 8 : 4;
    cl->count = count;
    cl->in_place = in_place;
    snprintf(cl->name, sizeof cl->name, "call%d", idx);
    cl->orig = malloc((size_t)(count + 1) * sizeof(double));
    cl->expect = malloc((size_t)(count + 1) * sizeof(double));
    if (!cl->orig || !cl->expect) abort();
    for (int i = 0; i < count; i++) {
        cl->orig[i] = (double)(idx % 97 + i % 13 + 1);
        cl->expect[i] = 2.0 * cl->orig[i];
    }
    cl->recv = alloc_buf(cl, GARBAGE);
    if (!in_place) {
        cl->send = alloc_buf(cl, 0.0);
        cl->vsend = ember_var_new(e);
    }
    if (has_copy) {
        cl->copy = alloc_buf(cl, GARBAGE);
        cl->vcopy = ember_var_new(e);
    }
    cl->vrecv = ember_var_new(e);
    fill_input(cl);
}

static void expect_ok(const call *cl, const char *what) {
    int at = 0;
    const char *why = verify_buf(cl, cl->recv, &at);
    CHECK(!why, "%s: %s recv: %s at %d", what, cl->name, why, at);
    if (cl->copy) {
        why = verify_buf(cl, cl->copy, &at);
        CHECK(!why, "%s: %s copy_to: %s at %d", what, cl->name, why, at);
    }
}

static ember_coll *make_coll(ember_engine *e, int hs, int window, int64_t chunk_bytes, double timeout_s,
                             double check_every_s, checker *k) {
    ember_mpi_fns m = fake_fns(hs);
    ember_coll *c = ember_coll_create(e, &m, window, chunk_bytes, 0.0002, timeout_s, check_every_s,
                                      k ? check_cb : NULL, k);
    CHECK(c, "ember_coll_create(window %d, chunk %lld) returned NULL", window, (long long)chunk_bytes);
    return c;
}

/* Stops the queue (every call finished), checks what it reports, destroys it.  Returns its max in flight. */
static int stop_destroy(ember_coll *c, int64_t issued, int window, const char *what) {
    CHECK(ember_coll_stop(c, 20000) == 0, "%s: ember_coll_stop did not finish", what);
    CHECK(ember_coll_finished(c) == issued, "%s: finished %lld of %lld calls", what,
          (long long)ember_coll_finished(c), (long long)issued);
    double dummy = 0;
    CHECK(ember_coll_allreduce(c, NULL, &dummy, 1, f_dtype(1), 8, NULL, NULL, 0, NULL, 0, 0, "late") == -1,
          "%s: issuing after stop did not return -1", what);
    CHECK(ember_coll_stop(c, 0) == 0, "%s: a second ember_coll_stop did not return 0", what);
    int maxc = ember_coll_max_in_flight(c);
    CHECK(maxc <= window, "%s: ember_coll_max_in_flight %d > window %d", what, maxc, window);
    ember_coll_destroy(c);
    return maxc;
}

/* Checks the post log against the calls (issue order, chunk order, chunk bounds): all their posts, or
 * (nexpect >= 0) only the first nexpect; nothing else may have been posted.  Returns the posts checked. */
static int check_post_log(call *const *calls, int n, int64_t chunk_bytes, int nexpect, const char *what) {
    pthread_mutex_lock(&F.mu);
    int p = 0;
    for (int i = 0; i < n && p != nexpect; i++) {
        const call *cl = calls[i];
        int64_t ce = chunk_bytes / cl->es;
        if (ce < 1) ce = 1;
        int64_t nch = cl->count == 0 ? 1 : (cl->count + ce - 1) / ce;
        for (int64_t k = 0; k < nch && p != nexpect; k++, p++) {
            CHECK(p < F.nlog, "%s: only %d posts logged, %s chunk %lld missing", what, F.nlog, cl->name,
                  (long long)k);
            const post_rec *r = &F.log[p];
            int64_t first = k * ce;
            int64_t cnt = cl->count - first < ce ? cl->count - first : ce;
            CHECK(r->recv == cl->recv + first * cl->es,
                  "%s: post %d: recv %p is not %s chunk %lld (ordering broken; issue index %d)", what, p, r->recv,
                  cl->name, (long long)k, i);
            CHECK(r->count == cnt, "%s: post %d (%s chunk %lld): count %d, expected %lld", what, p, cl->name,
                  (long long)k, r->count, (long long)cnt);
            const void *want_send = cl->in_place ? (const void *)f_inplace() : (const void *)(cl->send + first * cl->es);
            CHECK(r->send == want_send, "%s: post %d (%s chunk %lld): wrong send pointer", what, p, cl->name,
                  (long long)k);
            CHECK(r->dtype == f_dtype(cl->dbl), "%s: post %d: wrong dtype", what, p);
        }
    }
    CHECK(F.nlog == p, "%s: %d posts logged, expected %d", what, F.nlog, p);
    pthread_mutex_unlock(&F.mu);
    return p;
}

/* ------------------------------------------------------------------ random phase */

static int64_t random_phase(ember_engine *e, int hs, int window, int64_t chunk_bytes, int n, uint64_t *rng) {
    char what[96];
    snprintf(what, sizeof what, "random phase (%s engine, handles %d, window %d, chunk %lld bytes)",
             ember_engine_is_naive(e) ? "naive" : "threaded", hs, window, (long long)chunk_bytes);
    atomic_store(&g_phase, "the random phase");
    fake_reset(hs, window, splitmix(rng));
    checker k;
    checker_init(&k, 0);
    k.forbid = 1;
    ember_coll *c = make_coll(e, hs, window, chunk_bytes, 60.0, 30.0, &k);
    call *calls = calloc((size_t)n, sizeof *calls);
    call **order = calloc((size_t)n, sizeof *order);
    if (!calls || !order) abort();
    atomic_store(&g_prod_counter, 0);
    for (int i = 0; i < n; i++) {
        call *cl = &calls[i];
        order[i] = cl;
        cl->idx = i;
        cl->dbl = (int)(splitmix(rng) % 2);
        cl->es = cl->dbl ? 8 : 4;
        int64_t ce = chunk_bytes / cl->es;
        if (ce < 1) ce = 1;
        unsigned pick = (unsigned)(splitmix(rng) % 20);
        if (pick == 0) cl->count = 0;
        else if (pick <= 2 && ce <= 200) cl->count = (int)(ce * (int64_t)(1 + splitmix(rng) % 3)); /* multiple */
        else cl->count = 1 + (int)(splitmix(rng) % 150);
        cl->in_place = splitmix(rng) % 3 == 0;
        cl->has_copy = splitmix(rng) % 3 == 0;
        snprintf(cl->name, sizeof cl->name, "r%d", i);
        /* chained on an earlier call's result now and then: its op becomes ready inside the
         * completion of that call, in the queue's own thread */
        if (!cl->in_place && i > 0 && splitmix(rng) % 5 == 0) {
            call *s = &calls[i - 1 - (int)(splitmix(rng) % (uint64_t)(i < 8 ? i : 8))];
            if (s->dbl == cl->dbl && s->count >= cl->count && s->depth < 4) cl->src = s;
        }
        cl->orig = malloc((size_t)(cl->count + 1) * sizeof(double));
        cl->expect = malloc((size_t)(cl->count + 1) * sizeof(double));
        if (!cl->orig || !cl->expect) abort();
        for (int j = 0; j < cl->count; j++) {
            cl->orig[j] = cl->src ? cl->src->expect[j] : (double)(i % 97 + j % 13 + 1);
            cl->expect[j] = 2.0 * cl->orig[j];
        }
        cl->depth = cl->src ? cl->src->depth + 1 : 0;
        cl->recv = alloc_buf(cl, GARBAGE);
        if (cl->src) {
            cl->send = cl->src->recv;
        } else if (!cl->in_place) {
            cl->send = alloc_buf(cl, 0.0);
            cl->vsend = ember_var_new(e);
        }
        cl->vrecv = ember_var_new(e);
        if (cl->has_copy) {
            cl->copy = alloc_buf(cl, GARBAGE);
            cl->vcopy = ember_var_new(e);
        }
        cl->done_order = -1;
        if (!cl->src) {
            cl->producer = (int)(splitmix(rng) % 3);
            if (cl->producer == 2) cl->delay_us = 1 + (int)(splitmix(rng) % 40);
            if (cl->producer == 0) {
                fill_input(cl);
            } else {
                ember_var *w = cl->in_place ? cl->vrecv : cl->vsend;
                CHECK(push_plain(e, produce_op, cl, NULL, 0, &w, 1, "produce") == 0,
                      "push of a producer failed");
            }
        }
        cl->seq = issue(c, cl, (int)(splitmix(rng) % 3));
        CHECK(cl->seq == i, "%s: call %d got sequence number %lld", what, i, (long long)cl->seq);
        ember_var *r[2] = {cl->vrecv, cl->vcopy};
        CHECK(push_plain(e, consume_op, cl, r, cl->vcopy ? 2 : 1, NULL, 0, "consume") == 0,
              "push of a consumer failed");
    }
    int err = wait_all_checked(e, what);
    CHECK(err == 0, "%s: ember_wait_all returned error %d", what, err);
    CHECK_ASYNC(what);
    for (int i = 0; i < n; i++) {
        expect_ok(&calls[i], what);
        CHECK(ember_var_error(calls[i].vrecv) == 0, "%s: %s recv var has error %d", what, calls[i].name,
              ember_var_error(calls[i].vrecv));
    }
    int maxc = stop_destroy(c, n, window, what);
    check_post_log(order, n, chunk_bytes, -1, what);
    pthread_mutex_lock(&F.mu);
    int maxf = F.max_in_flight, left = F.in_flight;
    pthread_mutex_unlock(&F.mu);
    CHECK(maxf <= window && maxf == maxc, "%s: fake max in flight %d, queue says %d, window %d", what, maxf, maxc,
          window);
    CHECK(left == 0, "%s: %d requests left in flight", what, left);
    CHECK(k.n == 0, "%s: check was called %d times", what, k.n);
    /* readiness order vs issue order: producers that finished before an earlier-issued one */
    int64_t inversions = 0, last = -1;
    for (int i = 0; i < n; i++) {
        if (calls[i].done_order < 0) continue;
        if (calls[i].done_order < last) inversions++;
        if (calls[i].done_order > last) last = calls[i].done_order;
    }
    printf("  %s handles %d window %d chunk %5lld: %d calls, %d posts, max in flight %d, %lld ready out of order\n",
           ember_engine_is_naive(e) ? "naive   " : "threaded", hs, window, (long long)chunk_bytes, n, fake_nlog(), maxc,
           (long long)inversions);
    for (int i = 0; i < n; i++) call_free(e, &calls[i]);
    free(calls);
    free(order);
    checker_free(&k);
    fake_reset(hs, window, 0);
    return inversions;
}

/* ------------------------------------------------------------------ directed tests */

static _Atomic(ember_opr *) g_gate_op;

static int gate_op(void *ctx, ember_opr *op) {
    (void)ctx;
    atomic_store(&g_gate_op, op);
    return EMBER_PENDING;
}

static atomic_int g_flag;

static int wait_flag_op(void *ctx, ember_opr *op) {
    (void)ctx;
    (void)op;
    while (!atomic_load(&g_flag)) sleep_us(500);
    return 0;
}

static int fail_op(void *ctx, ember_opr *op) {
    (void)op;
    return *(int *)ctx;
}

static void issue_all(ember_coll *c, call *calls, int n, const char *what) {
    for (int i = 0; i < n; i++) {
        calls[i].seq = issue(c, &calls[i], 0);
        CHECK(calls[i].seq == i, "%s: issue %d returned %lld", what, i, (long long)calls[i].seq);
    }
}

static void free_calls(ember_engine *e, call *calls, int n) {
    for (int i = 0; i < n; i++) call_free(e, &calls[i]);
}

static void ptrs(call *calls, int n, call **out) {
    for (int i = 0; i < n; i++) out[i] = &calls[i];
}

/* The first call waits for an engine op that finishes only when the test says so; the calls
 * behind it are ready at once, yet nothing is posted before it. */
static void test_gated_order(ember_engine *e, int hs) {
    const char *what = hs == 4 ? "gated order (int handles)" : "gated order (intptr_t handles)";
    atomic_store(&g_phase, "test_gated_order");
    enum { N = 7 };
    fake_reset(hs, 2, 11);
    ember_coll *c = make_coll(e, hs, 2, 16, 60.0, 30.0, NULL);
    call calls[N], *order[N];
    ptrs(calls, N, order);
    int counts[N] = {10, 0, 3, 8, 0, 17, 1};
    for (int i = 0; i < N; i++) simple_call(e, &calls[i], i, counts[i], i % 2, i % 3 == 1, i % 2 == 0);
    atomic_store(&g_gate_op, NULL);
    ember_var *gw = calls[0].vsend;
    CHECK(push_plain(e, gate_op, NULL, NULL, 0, &gw, 1, "gate") == 0, "gate push");
    issue_all(c, calls, N, what);
    for (int i = 0; i < 400 && !atomic_load(&g_gate_op); i++) sleep_us(1000);
    ember_opr *gate = atomic_load(&g_gate_op);
    CHECK(gate, "%s: the gate op never ran", what);
    sleep_us(20000);
    CHECK(fake_nlog() == 0, "%s: %d requests posted before the first call was ready", what, fake_nlog());
    CHECK(ember_coll_finished(c) == 0, "%s: calls finished before the first", what);
    ember_complete(gate, 0);
    CHECK(ember_wait_all(e, -1) == 0, "%s: engine error", what);
    for (int i = 0; i < N; i++) expect_ok(&calls[i], what);
    stop_destroy(c, N, 2, what);
    check_post_log(order, N, 16, -1, what);
    CHECK_ASYNC(what);
    free_calls(e, calls, N);
    fake_reset(hs, 2, 0);
}

/* Asserts call i's outcome: 0 (and values), or an id `check` issued for `why` about this call. */
static int expect_fail(ember_engine *e, checker *k, call *cl, int why, int code, const char *what) {
    int err = ember_wait_var(e, cl->vrecv);
    CHECK(err == ember_var_error(cl->vrecv), "%s: wait_var and var_error disagree", what);
    if (why < 0) {
        CHECK(err == 0, "%s: %s failed with %d, expected success", what, cl->name, err);
        expect_ok(cl, what);
        return 0;
    }
    CHECK(err > 0, "%s: %s succeeded, expected a failure (why %d)", what, cl->name, why);
    if (k) {
        const check_rec *r = checker_find(k, err);
        CHECK(r, "%s: %s failed with id %d that check never issued", what, cl->name, err);
        CHECK(r->why == why, "%s: %s failed with id %d issued for why %d, expected why %d", what, cl->name, err,
              r->why, why);
        CHECK(strcmp(r->name, cl->name) == 0, "%s: id %d was issued for %s, not %s", what, err, r->name, cl->name);
        CHECK(r->code == code, "%s: %s: check got code %d, expected %d", what, cl->name, r->code, code);
    } else {
        CHECK(err == EMBER_ERR_CANCELLED, "%s: without check, %s failed with %d", what, cl->name, err);
    }
    if (cl->copy) /* a failed call leaves copy_to alone */
        for (int i = 0; i < cl->count; i++)
            CHECK(get(cl->copy, cl->dbl, i) == GARBAGE, "%s: %s failed but copy_to was written", what, cl->name);
    return err;
}

static void expect_distinct(const int *ids, int n, const char *what) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            CHECK(ids[i] == 0 || ids[i] != ids[j], "%s: calls %d and %d share error id %d", what, i, j, ids[i]);
}

/* (a) iallreduce returns an error at call K (chunk `kchunk` of it).  Call 6 also reads a variable
 * carrying an engine error: it keeps that error. */
static void test_post_error(ember_engine *e, int hs, int window, int64_t chunk, int kchunk, int use_check) {
    char what[96];
    snprintf(what, sizeof what, "iallreduce error (handles %d, window %d, chunk %lld, check %d)", hs, window,
             (long long)chunk, use_check);
    atomic_store(&g_phase, "test_post_error");
    enum { N = 9, K = 3, BAD_INPUT = 6 };
    fake_reset(hs, window, 21);
    checker k;
    checker_init(&k, 0);
    ember_coll *c = make_coll(e, hs, window, chunk, 60.0, 30.0, use_check ? &k : NULL);
    call calls[N], *order[N];
    ptrs(calls, N, order);
    for (int i = 0; i < N; i++) simple_call(e, &calls[i], i, 10, i % 2, 0, i % 2 == 1);
    int ce = chunk / calls[K].es > 0 ? (int)(chunk / calls[K].es) : 1;
    F.fail_post_recv = calls[K].recv + (int64_t)kchunk * ce * calls[K].es;
    F.fail_post_code = 17;
    int input_err = 555;
    CHECK(push_plain(e, fail_op, &input_err, NULL, 0, &calls[BAD_INPUT].vsend, 1, "fail") == 0, "push");
    issue_all(c, calls, N, what);
    int ids[N];
    for (int i = 0; i < N; i++) {
        if (i < K) {
            /* with a window > 1, a call still in flight when call K fails is abandoned (STOPPED) */
            int err = ember_wait_var(e, calls[i].vrecv);
            ids[i] = expect_fail(e, use_check ? &k : NULL, &calls[i], err == 0 ? -1 : EMBER_COLL_STOPPED, 0, what);
        } else if (i == K) {
            ids[i] = expect_fail(e, use_check ? &k : NULL, &calls[i], EMBER_COLL_MPI_ERROR, 17, what);
        } else if (i == BAD_INPUT) {
            int err = ember_wait_var(e, calls[i].vrecv);
            CHECK(err == input_err, "%s: %s read a failed input: error %d, expected the input's %d", what,
                  calls[i].name, err, input_err);
            ids[i] = 0;
        } else {
            ids[i] = expect_fail(e, use_check ? &k : NULL, &calls[i], EMBER_COLL_STOPPED, 0, what);
        }
    }
    if (window == 1)
        for (int i = 0; i < K; i++) CHECK(ids[i] == 0, "%s: call %d before the failure failed (window 1)", what, i);
    if (use_check) {
        expect_distinct(ids, N, what);
        CHECK(checker_count(&k, NULL, EMBER_COLL_MPI_ERROR) == 1, "%s: MPI_ERROR asked %d times", what,
              checker_count(&k, NULL, EMBER_COLL_MPI_ERROR));
        CHECK(checker_count(&k, NULL, EMBER_COLL_WAITING) + checker_count(&k, NULL, EMBER_COLL_TIMEOUT) +
                      checker_count(&k, NULL, EMBER_COLL_INPUT_FAILED) == 0,
              "%s: unexpected check reasons", what);
        /* it keeps its input's error, so no id is asked for it (one would never be reported) */
        CHECK(checker_count(&k, calls[BAD_INPUT].name, EMBER_COLL_STOPPED) == 0,
              "%s: an id was asked for the call with a failed input after the failure", what);
    }
    CHECK(ember_wait_all(e, -1) > 0, "%s: wait_all saw no error", what);
    CHECK(ember_wait_all(e, -1) == 0, "%s: wait_all did not clear the errors", what);
    stop_destroy(c, N, window, what);
    /* posts: the calls before K (all chunks), then K's chunks up to the failing one, nothing after */
    int before = 0;
    for (int i = 0; i < K; i++) {
        int cei = chunk / calls[i].es > 0 ? (int)(chunk / calls[i].es) : 1;
        before += (calls[i].count + cei - 1) / cei;
    }
    check_post_log(order, N, chunk, before + kchunk + 1, what);
    CHECK_ASYNC(what);
    free_calls(e, calls, N);
    checker_free(&k);
    fake_reset(hs, window, 0);
}

/* (b) MPI_Test returns an error for call 2's request. */
static void test_test_error(ember_engine *e, int hs) {
    const char *what = hs == 4 ? "MPI_Test error (int handles)" : "MPI_Test error (intptr_t handles)";
    atomic_store(&g_phase, "test_test_error");
    enum { N = 7, K = 2 };
    fake_reset(hs, 2, 31);
    checker k;
    checker_init(&k, 0);
    ember_coll *c = make_coll(e, hs, 2, 1 << 20, 60.0, 30.0, &k);
    call calls[N], *order[N];
    ptrs(calls, N, order);
    for (int i = 0; i < N; i++) simple_call(e, &calls[i], i, 5 + i, i % 2, i % 2, 1);
    F.fail_test_recv = calls[K].recv;
    F.fail_test_code = 23;
    issue_all(c, calls, N, what);
    int ids[N];
    for (int i = 0; i < N; i++) {
        int why = i < K ? -1 : i == K ? EMBER_COLL_MPI_ERROR : EMBER_COLL_STOPPED;
        ids[i] = expect_fail(e, &k, &calls[i], why, i == K ? 23 : 0, what);
    }
    expect_distinct(ids, N, what);
    CHECK(checker_count(&k, NULL, EMBER_COLL_MPI_ERROR) == 1, "%s: MPI_ERROR asked %d times", what,
          checker_count(&k, NULL, EMBER_COLL_MPI_ERROR));
    CHECK(ember_wait_all(e, -1) > 0, "%s: wait_all saw no error", what);
    stop_destroy(c, N, 2, what);
    int n = fake_nlog();
    CHECK(n == K + 1 || n == K + 2, "%s: %d posts (window 2: calls up to %d)", what, n, K + 1);
    check_post_log(order, N, 1 << 20, n, what);
    CHECK_ASYNC(what);
    free_calls(e, calls, N);
    checker_free(&k);
    fake_reset(hs, 2, 0);
}

/* (c) call 2's request never completes: check sees WAITING, then TIMEOUT (fail_after == 0), or
 * fails the call at its fail_after-th WAITING. */
static void test_stuck(ember_engine *e, int hs, int window, int fail_after) {
    char what[96];
    snprintf(what, sizeof what, "stuck request (handles %d, window %d, %s)", hs, window,
             fail_after ? "check fails it while waiting" : "timeout");
    atomic_store(&g_phase, "test_stuck");
    enum { N = 6, K = 2 };
    fake_reset(hs, window, 41);
    checker k;
    checker_init(&k, fail_after);
    double timeout = fail_after ? 30.0 : 0.2;
    ember_coll *c = make_coll(e, hs, window, 1 << 20, timeout, 0.02, &k);
    call calls[N], *order[N];
    ptrs(calls, N, order);
    for (int i = 0; i < N; i++) simple_call(e, &calls[i], i, 4, 1, 0, 1);
    F.stuck_recv = calls[K].recv;
    double t0 = (double)ember_now_ns() * 1e-9;
    issue_all(c, calls, N, what);
    int ids[N];
    for (int i = 0; i < N; i++) {
        int why = i < K ? -1 : i == K ? (fail_after ? EMBER_COLL_WAITING : EMBER_COLL_TIMEOUT) : EMBER_COLL_STOPPED;
        ids[i] = expect_fail(e, &k, &calls[i], why, 0, what);
    }
    double waited = (double)ember_now_ns() * 1e-9 - t0;
    expect_distinct(ids, N, what);
    pthread_mutex_lock(&k.mu);
    int nwait = checker_count(&k, NULL, EMBER_COLL_WAITING);
    CHECK(nwait >= 1 && checker_count(&k, calls[K].name, EMBER_COLL_WAITING) == nwait,
          "%s: %d WAITING checks, %d of them about the stuck call", what, nwait,
          checker_count(&k, calls[K].name, EMBER_COLL_WAITING));
    if (fail_after) {
        CHECK(nwait == fail_after, "%s: %d WAITING checks, expected %d", what, nwait, fail_after);
        CHECK(checker_count(&k, NULL, EMBER_COLL_TIMEOUT) == 0, "%s: a TIMEOUT was reported too", what);
    } else {
        CHECK(checker_count(&k, NULL, EMBER_COLL_TIMEOUT) == 1, "%s: TIMEOUT asked %d times", what,
              checker_count(&k, NULL, EMBER_COLL_TIMEOUT));
        CHECK(waited >= timeout, "%s: timed out after %.3f s < %.3f s", what, waited, timeout);
        /* WAITING checks come more than check_every_s apart, all before the timeout */
        CHECK(nwait <= (int)(timeout / 0.02) + 1, "%s: %d WAITING checks before a %.2f s timeout", what, nwait,
              timeout);
        int seen_timeout = 0;
        for (int i = 0; i < k.n; i++) {
            if (k.recs[i].why == EMBER_COLL_TIMEOUT) seen_timeout = 1;
            CHECK(!(seen_timeout && k.recs[i].why == EMBER_COLL_WAITING), "%s: WAITING after TIMEOUT", what);
        }
    }
    pthread_mutex_unlock(&k.mu);
    ember_wait_all(e, -1);
    stop_destroy(c, N, window, what);
    int n = fake_nlog();
    CHECK(n >= K + 1 && n <= K + window, "%s: %d posts", what, n);
    check_post_log(order, N, 1 << 20, n, what);
    CHECK_ASYNC(what);
    free_calls(e, calls, N);
    checker_free(&k);
    fake_reset(hs, window, 0);
}

/* (d) call 2 reads a variable written by an op that failed: it keeps that error, check is told
 * INPUT_FAILED, the calls after it fail. */
static void test_input_failed(ember_engine *e, int hs) {
    const char *what = hs == 4 ? "failed input (int handles)" : "failed input (intptr_t handles)";
    atomic_store(&g_phase, "test_input_failed");
    enum { N = 6, K = 2 };
    fake_reset(hs, 2, 51);
    checker k;
    checker_init(&k, 0);
    ember_coll *c = make_coll(e, hs, 2, 8, 60.0, 30.0, &k);
    call calls[N], *order[N];
    ptrs(calls, N, order);
    for (int i = 0; i < N; i++) simple_call(e, &calls[i], i, 7, i % 2, 0, 1);
    int input_err = 777;
    CHECK(push_plain(e, fail_op, &input_err, NULL, 0, &calls[K].vsend, 1, "fail") == 0, "push");
    issue_all(c, calls, N, what);
    int ids[N];
    for (int i = 0; i < N; i++) {
        if (i == K) {
            int err = ember_wait_var(e, calls[i].vrecv);
            CHECK(err == input_err, "%s: the call with the failed input ended with %d, expected %d", what, err,
                  input_err);
            CHECK(ember_var_error(calls[i].vcopy) == input_err, "%s: its copy_to var has error %d", what,
                  ember_var_error(calls[i].vcopy));
            for (int j = 0; j < calls[i].count; j++)
                CHECK(get(calls[i].copy, calls[i].dbl, j) == GARBAGE, "%s: copy_to written", what);
            ids[i] = 0;
        } else {
            ids[i] = expect_fail(e, &k, &calls[i], i < K ? -1 : EMBER_COLL_STOPPED, 0, what);
        }
    }
    expect_distinct(ids, N, what);
    CHECK(checker_count(&k, calls[K].name, EMBER_COLL_INPUT_FAILED) == 1 &&
              checker_count(&k, NULL, EMBER_COLL_INPUT_FAILED) == 1,
          "%s: INPUT_FAILED asked %d times", what, checker_count(&k, NULL, EMBER_COLL_INPUT_FAILED));
    CHECK(ember_wait_all(e, -1) > 0, "%s: wait_all saw no error", what);
    stop_destroy(c, N, 2, what);
    check_post_log(order, K, 8, -1, what); /* the calls before K, and nothing else */
    CHECK_ASYNC(what);
    free_calls(e, calls, N);
    checker_free(&k);
    fake_reset(hs, 2, 0);
}

/* (6) stop with a call whose op never became ready; issue after stop; bad arguments. */
static void test_lifecycle(ember_engine *e, int hs) {
    const char *what = hs == 4 ? "lifecycle (int handles)" : "lifecycle (intptr_t handles)";
    atomic_store(&g_phase, "test_lifecycle");
    enum { N = 4, GATED = 1 };
    fake_reset(hs, 1, 61);
    ember_coll *c = make_coll(e, hs, 1, 1 << 20, 60.0, 30.0, NULL);
    call calls[N], *order[N];
    ptrs(calls, N, order);
    for (int i = 0; i < N; i++) simple_call(e, &calls[i], i, 3, 0, i == 3, 0);
    atomic_store(&g_flag, 0);
    CHECK(push_plain(e, wait_flag_op, NULL, NULL, 0, &calls[GATED].vsend, 1, "flag") == 0, "push");
    issue_all(c, calls, N, what);
    CHECK(ember_wait_var(e, calls[0].vrecv) == 0, "%s: call 0 failed", what);
    CHECK(ember_coll_stop(c, 50) == -1, "%s: stop returned 0 with a call whose op is not ready", what);
    double d = 0;
    CHECK(ember_coll_allreduce(c, NULL, &d, 1, f_dtype(1), 8, NULL, NULL, 0, NULL, 0, 0, "late") == -1,
          "%s: issuing after a timed-out stop did not return -1", what);
    CHECK(fake_nlog() == 1, "%s: %d posts while call 1 was not ready", what, fake_nlog());
    CHECK(ember_coll_finished(c) == 1, "%s: finished %lld", what, (long long)ember_coll_finished(c));
    atomic_store(&g_flag, 1);
    CHECK(ember_wait_all(e, -1) == 0, "%s: engine error", what);
    for (int i = 0; i < N; i++) expect_ok(&calls[i], what);
    stop_destroy(c, N, 1, what);
    check_post_log(order, N, 1 << 20, -1, what);

    /* bad arguments */
    fake_reset(hs, 1, 62);
    ember_mpi_fns m = fake_fns(hs), bad;
    CHECK(!ember_coll_create(NULL, &m, 1, 64, 0, 1, 1, NULL, NULL), "NULL engine accepted");
    CHECK(!ember_coll_create(e, NULL, 1, 64, 0, 1, 1, NULL, NULL), "NULL mpi accepted");
    CHECK(!ember_coll_create(e, &m, 0, 64, 0, 1, 1, NULL, NULL), "window 0 accepted");
    CHECK(!ember_coll_create(e, &m, 1, 0, 0, 1, 1, NULL, NULL), "chunk 0 accepted");
    CHECK(!ember_coll_create(e, &m, 1, 64, -1, 1, 1, NULL, NULL), "negative spin accepted");
    CHECK(!ember_coll_create(e, &m, 1, 64, 0, 0, 1, NULL, NULL), "timeout 0 accepted");
    CHECK(!ember_coll_create(e, &m, 1, 64, 0, 1, 0, NULL, NULL), "check_every 0 accepted");
    bad = m;
    bad.handle_size = 2;
    CHECK(!ember_coll_create(e, &bad, 1, 64, 0, 1, 1, NULL, NULL), "handle_size 2 accepted");
    bad = m;
    bad.iallreduce = NULL;
    CHECK(!ember_coll_create(e, &bad, 1, 64, 0, 1, 1, NULL, NULL), "NULL iallreduce accepted");
    bad = m;
    bad.test = NULL;
    CHECK(!ember_coll_create(e, &bad, 1, 64, 0, 1, 1, NULL, NULL), "NULL test accepted");
    c = make_coll(e, hs, 1, 64, 60.0, 30.0, NULL);
    CHECK(ember_coll_allreduce(NULL, NULL, &d, 1, 0, 8, NULL, NULL, 0, NULL, 0, 0, "x") == -2, "NULL queue");
    CHECK(ember_coll_allreduce(c, NULL, NULL, 1, 0, 8, NULL, NULL, 0, NULL, 0, 0, "x") == -2, "NULL recv");
    CHECK(ember_coll_allreduce(c, NULL, &d, -1, 0, 8, NULL, NULL, 0, NULL, 0, 0, "x") == -2, "count -1");
    CHECK(ember_coll_allreduce(c, NULL, &d, 1, 0, 0, NULL, NULL, 0, NULL, 0, 0, "x") == -2, "elem_size 0");
    CHECK(ember_coll_allreduce(c, NULL, &d, 1, 0, 8, NULL, NULL, -1, NULL, 0, 0, "x") == -2, "nread -1");
    CHECK(ember_coll_finished(c) == 0, "%s: rejected calls were counted", what);
    stop_destroy(c, 0, 1, what); /* an idle queue with no calls at all */
    CHECK(fake_nlog() == 0, "%s: a rejected call was posted", what);
    CHECK_ASYNC(what);
    free_calls(e, calls, N);
    fake_reset(hs, 1, 0);
}

/* The engine cancels a call's op at stop (its input was still being computed): the op still runs
 * (EMBER_ON_ERROR) as a failed input, so the queue does not jam: the call ends with
 * EMBER_ERR_CANCELLED, the call after it with a STOPPED id, and the queue stops and frees. */
static void test_cancelled(int hs) {
    const char *what = hs == 4 ? "cancelled call (handles 4)" : "cancelled call (handles 8)";
    atomic_store(&g_phase, what);
    ember_engine *e = ember_engine_create(0, 2, 1);
    checker k;
    checker_init(&k, 0);
    ember_coll *c = make_coll(e, hs, 2, 1 << 20, 10.0, 1.0, &k);
    ember_var *v = ember_var_new(e), *w1 = ember_var_new(e), *w2 = ember_var_new(e);
    float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    atomic_store(&g_flag, 0);
    CHECK(push_plain(e, wait_flag_op, NULL, NULL, 0, &v, 1, "slow") == 0,
          "%s: push of the slow op failed", what);
    CHECK(ember_coll_allreduce(c, NULL, a, 4, f_dtype(0), 4, NULL, &v, 1, &w1, 1, 0, "waits") == 0,
          "%s: issue of call 0 failed", what);
    CHECK(ember_coll_allreduce(c, NULL, b, 4, f_dtype(0), 4, NULL, NULL, 0, &w2, 1, 0, "after") == 1,
          "%s: issue of call 1 failed", what);
    /* the slow op is running: stop gives up after 20 ms and cancels what waits behind it */
    CHECK(ember_engine_stop(e, 20) != 0, "%s: the engine drained although an op was still running", what);
    atomic_store(&g_flag, 1);
    CHECK(ember_coll_stop(c, 20000) == 0, "%s: the queue did not stop after its op was cancelled", what);
    CHECK(ember_coll_finished(c) == 2, "%s: finished %lld of 2 calls", what, (long long)ember_coll_finished(c));
    CHECK(ember_var_error(w1) == EMBER_ERR_CANCELLED, "%s: the cancelled call's output has error %d", what,
          ember_var_error(w1));
    int id = ember_var_error(w2);
    const check_rec *rec = checker_find(&k, id);
    CHECK(rec && rec->why == EMBER_COLL_STOPPED, "%s: the call after it has error %d (why %d)", what, id,
          rec ? rec->why : -1);
    CHECK(checker_count(&k, "waits", EMBER_COLL_INPUT_FAILED) == 1, "%s: INPUT_FAILED not reported once", what);
    CHECK(a[0] == 1 && b[0] == 5, "%s: a failed call wrote its buffer", what);
    ember_coll_destroy(c);
    ember_engine_start(e);
    ember_var_delete(e, v);
    ember_var_delete(e, w1);
    ember_var_delete(e, w2);
    ember_engine_destroy(e);
    checker_free(&k);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int n = argc > 1 ? atoi(argv[1]) : 3000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 20261203u;
    if (n < 12) n = 12;
    printf("collectives stress: %d calls in the random phase, seed %llu\n", n, (unsigned long long)seed);
    pthread_t dog;
    CHECK(pthread_create(&dog, NULL, watchdog, NULL) == 0, "cannot start the watchdog");
    ember_engine *e = ember_engine_create(0, 2, 1);
    uint64_t rng = seed;
    /* chunk sizes: under one double (clamped to one element), odd, round, one chunk per call */
    static const int64_t chunks[2][3] = {{4, 100, 64}, {12, 4096, 20}};
    int64_t inversions = 0;
    for (int hs = 4; hs <= 8; hs += 4)
        for (int w = 0; w < 3; w++) inversions += random_phase(e, hs, 1 << w, chunks[hs / 8][w], n / 6, &rng);
    {
        /* a naive engine: every push (the call's included) returns only once its op finished */
        ember_engine *naive = ember_engine_create(1, 2, 1);
        inversions += random_phase(naive, 8, 2, 12, n / 12 > 12 ? n / 12 : 12, &rng);
        ember_engine_destroy(naive);
    }
    for (int hs = 4; hs <= 8; hs += 4) {
        test_gated_order(e, hs);
        test_post_error(e, hs, 1, 1 << 20, 0, 1);
        test_post_error(e, hs, 4, 16, 1, 1);
        test_post_error(e, hs, 2, 12, 2, 0);
        test_test_error(e, hs);
        test_stuck(e, hs, 1, 0);
        test_stuck(e, hs, 2, 3);
        test_input_failed(e, hs);
        test_lifecycle(e, hs);
        test_cancelled(hs);
        printf("  handles %d: ordering, failures, cancellation and lifecycle ok\n", hs);
    }
    atomic_store(&g_phase, "ember_engine_destroy");
    ember_engine_destroy(e);
    CHECK_ASYNC("end");
    pthread_mutex_lock(&g_dog_mu);
    g_dog_done = 1;
    pthread_cond_signal(&g_dog_cv);
    pthread_mutex_unlock(&g_dog_mu);
    pthread_join(dog, NULL);
    pthread_mutex_lock(&F.mu);
    free(F.reqs);
    free(F.log);
    F.reqs = NULL;
    F.log = NULL;
    pthread_mutex_unlock(&F.mu);
    printf("collectives stress: ok (%lld calls ready out of issue order)\n", (long long)inversions);
    return 0;
}
