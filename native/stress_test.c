/* Stress test of the C engine alone, run under ASan and valgrind by `make memcheck`.
 *
 * Random DAGs: every op applies a non-commutative update to the values it writes
 * from the values it reads, so any ordering error changes the final state; the
 * result must equal serial execution.  Also covers failing ops, inherited
 * errors and recovery, ops claimed by their pusher (ember_claim), async
 * completion from another thread, variable deletion
 * with pending ops, a stop that cannot drain followed by a restart and destroy, a batch popped
 * while the engine cancels (EMBER_ON_ERROR ops still run, as single ops do),
 * host copies (ready at push, made ready by a worker, after a failed input),
 * every policy and both engine types.  Usage: stress_test [nops]
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, fork, alarm, waitpid under -std=c11 */
#include "engine.h"
#include "host_copy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NVARS 50
#define MAXIO 6

typedef struct {
    int id;
    int nr, nw;
    int r[MAXIO], w[MAXIO];
    int fail;
    uint64_t *vals;
} task;

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static void apply(const task *t, uint64_t *vals) {
    uint64_t acc = (uint64_t)t->id;
    for (int i = 0; i < t->nr; i++) acc = mix(acc, vals[t->r[i]]);
    for (int i = 0; i < t->nw; i++) vals[t->w[i]] = mix(vals[t->w[i]] * 31 + 7, acc + (uint64_t)i);
}

static int run_task(void *ctx, ember_opr *op) {
    (void)op;
    task *t = ctx;
    if (t->fail) return 1000 + t->id;
    apply(t, t->vals);
    return 0;
}

/* Sessions (ember_set_session): a session task must run between its worker's enter and leave,
 * which must alternate per thread. */
static _Thread_local int in_session;
static atomic_int session_faults, sessions;

static void session_enter(void) {
    if (in_session) atomic_fetch_add(&session_faults, 1);
    in_session = 1;
    atomic_fetch_add(&sessions, 1);
}

static void session_leave(void) {
    if (!in_session) atomic_fetch_add(&session_faults, 1);
    in_session = 0;
}

static int run_session_task(void *ctx, ember_opr *op) {
    if (!in_session) atomic_fetch_add(&session_faults, 1);
    return run_task(ctx, op);
}

/* An op on queue 0 reading nr variables and writing nw. */
static int push_task(ember_engine *e, ember_fn fn, void *ctx, ember_var *const *reads, int nr,
                     ember_var *const *writes, int nw, int priority, int prop, const char *name) {
    ember_var *vars[2 * MAXIO];
    if (nr > MAXIO || nw > MAXIO) return -2;
    for (int i = 0; i < nr; i++) vars[i] = reads[i];
    for (int i = 0; i < nw; i++) vars[nr + i] = writes[i];
    const ember_op_attrs attrs = {0, priority, prop, 0, name, 0};
    return ember_push(e, fn, ctx, vars, nr, nw, &attrs);
}

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

static void make_tasks(task *ts, int n, unsigned seed) {
    for (int i = 0; i < n; i++) {
        task *t = &ts[i];
        memset(t, 0, sizeof *t);
        t->id = i;
        t->nr = (int)(rnd(&seed) % 4);
        t->nw = 1 + (int)(rnd(&seed) % 2);
        for (int k = 0; k < t->nr; k++) t->r[k] = (int)(rnd(&seed) % NVARS);
        for (int k = 0; k < t->nw; k++) t->w[k] = (int)(rnd(&seed) % NVARS);
        /* a duplicate and an overlap now and then: tolerated by the engine */
        if (rnd(&seed) % 16 == 0 && t->nr > 0) t->w[0] = t->r[0];
    }
}

static int check_dag(int n, int naive, int policy, unsigned seed, int batched) {
    ember_engine *e = ember_engine_create(naive, 4, 1);
    ember_set_policy(e, policy, NULL);
    if (batched) ember_set_session(e, run_session_task, session_enter, session_leave, NULL);
    ember_fn body = batched ? run_session_task : run_task;
    atomic_store(&session_faults, 0);
    atomic_store(&sessions, 0);
    task *ts = malloc(sizeof(task) * (size_t)n);
    uint64_t ref[NVARS], vals[NVARS];
    for (int i = 0; i < NVARS; i++) ref[i] = vals[i] = (uint64_t)i;
    make_tasks(ts, n, seed);
    ember_var *vars[NVARS];
    for (int i = 0; i < NVARS; i++) vars[i] = ember_var_new(e);
    for (int i = 0; i < n; i++) {
        apply(&ts[i], ref);
        ts[i].vals = vals;
        ember_var *r[MAXIO], *w[MAXIO];
        for (int k = 0; k < ts[i].nr; k++) r[k] = vars[ts[i].r[k]];
        for (int k = 0; k < ts[i].nw; k++) w[k] = vars[ts[i].w[k]];
        int prio = (int)(rnd(&seed) % 5);
        if (i % 5 == 3 && ember_claim_idle(e)) { /* nothing pending anywhere: run it here, unregistered */
            int rc = run_task(&ts[i], NULL);
            ember_release_idle(e, w, ts[i].nw, rc);
            continue;
        }
        if (i % 5 == 1) { /* run it here if it can start now, else push it normally */
            ember_var *rw[2 * MAXIO];
            for (int k = 0; k < ts[i].nr; k++) rw[k] = r[k];
            for (int k = 0; k < ts[i].nw; k++) rw[ts[i].nr + k] = w[k];
            const ember_op_attrs now = {0, prio, EMBER_PROP_NORMAL, 0, "now", 0};
            ember_opr *here = ember_claim(e, rw, ts[i].nr, ts[i].nw, &now);
            if (here) {
                ember_complete(here, run_task(&ts[i], here));
                continue;
            }
        }
        push_task(e, body, &ts[i], r, ts[i].nr, w, ts[i].nw, prio, EMBER_PROP_NORMAL, "task");
    }
    int err = ember_wait_all(e, -1);
    int bad = err != 0 || memcmp(ref, vals, sizeof ref) != 0 || atomic_load(&session_faults) != 0 ||
              (batched && atomic_load(&sessions) == 0);
    for (int i = 0; i < NVARS; i++) ember_var_delete(e, vars[i]);
    ember_engine_destroy(e);
    free(ts);
    if (bad) fprintf(stderr, "DAG mismatch: naive=%d policy=%d batched=%d err=%d\n", naive, policy, batched, err);
    return bad;
}

static int check_errors(void) {
    ember_engine *e = ember_engine_create(0, 2, 1);
    ember_var *a = ember_var_new(e), *b = ember_var_new(e);
    uint64_t vals[NVARS] = {0};
    task fail = {.id = 1, .nw = 1, .w = {0}, .fail = 1, .vals = vals};
    task dep = {.id = 2, .nr = 1, .r = {0}, .nw = 1, .w = {1}, .vals = vals};
    task fix = {.id = 3, .nw = 1, .w = {0}, .vals = vals};
    int bad = 0;
    for (int i = 0; i < 1000; i++) {
        push_task(e, run_task, &fail, NULL, 0, &a, 1, 0, 0, "fail");
        push_task(e, run_task, &dep, &a, 1, &b, 1, 0, 0, "dep");
        if (ember_wait_var(e, b) != 1001) bad = 1; /* inherited */
    }
    if (ember_wait_all(e, -1) != 1001) bad = 1;
    if (ember_wait_all(e, -1) != 0) bad = 1; /* cleared */
    push_task(e, run_task, &fix, NULL, 0, &a, 1, 0, 0, "fix");
    if (ember_wait_var(e, a) != 0) bad = 1; /* a successful write clears the error */
    int ids[4096];
    int nrel = ember_released_errors(e, ids, 4096);
    if (nrel < 999) bad = 1; /* every overwritten error was released */
    ember_var_delete(e, a);
    ember_var_delete(e, b);
    ember_engine_destroy(e);
    if (bad) fprintf(stderr, "error propagation failed\n");
    return bad;
}

/* ember_clear_error: a cleared error is no longer reported and no longer skips readers, on every
 * variable carrying it (the failed op's output and what inherited it); others stay. */
static int check_clear_error(void) {
    ember_engine *e = ember_engine_create(0, 2, 1);
    ember_var *a = ember_var_new(e), *b = ember_var_new(e), *c = ember_var_new(e);
    uint64_t vals[NVARS] = {0};
    task fail = {.id = 1, .nw = 1, .w = {0}, .fail = 1, .vals = vals};
    task dep = {.id = 2, .nr = 1, .r = {0}, .nw = 1, .w = {1}, .vals = vals};
    task other = {.id = 4, .nw = 1, .w = {2}, .fail = 1, .vals = vals};
    int bad = 0;
    push_task(e, run_task, &fail, NULL, 0, &a, 1, 0, 0, "fail");
    push_task(e, run_task, &dep, &a, 1, &b, 1, 0, 0, "dep");
    push_task(e, run_task, &other, NULL, 0, &c, 1, 0, 0, "other");
    int id = ember_wait_var(e, b);
    if (id != 1001 || vals[1] != 0) bad = 1; /* dep was skipped, inheriting a's error */
    ember_clear_error(e, id);
    if (ember_var_error(a) != 0 || ember_var_error(b) != 0 || ember_wait_var(e, b) != 0) bad = 1;
    /* another error stays (wait for its op first: only b was waited for above) */
    if (ember_wait_var(e, c) != 1004 || ember_var_error(c) != 1004) bad = 1;
    push_task(e, run_task, &dep, &a, 1, &b, 1, 0, 0, "dep");
    if (ember_wait_var(e, b) != 0 || vals[1] == 0) bad = 1; /* a reader of a cleared error runs */
    ember_wait_all(e, -1);
    ember_var_delete(e, a);
    ember_var_delete(e, b);
    ember_var_delete(e, c);
    ember_engine_destroy(e);
    if (bad) fprintf(stderr, "clearing a raised error failed\n");
    return bad;
}

typedef struct {
    ember_opr *op;
    int *flag;
} async_job;

static void *finish_later(void *arg) {
    async_job *j = arg;
    *j->flag = 42;
    ember_complete(j->op, 0);
    return NULL;
}

static pthread_t async_thread;
static async_job job;

static int start_async(void *ctx, ember_opr *op) {
    job.op = op;
    job.flag = ctx;
    pthread_create(&async_thread, NULL, finish_later, &job);
    return EMBER_PENDING;
}

static int check_async(int naive) {
    ember_engine *e = ember_engine_create(naive, 2, 1);
    ember_var *v = ember_var_new(e);
    int flag = 0;
    push_task(e, start_async, &flag, NULL, 0, &v, 1, 0, EMBER_PROP_ASYNC, "async");
    ember_wait_var(e, v);
    int bad = flag != 42;
    pthread_join(async_thread, NULL);
    /* deleting a variable with ops pending on it */
    uint64_t vals[NVARS] = {0};
    task t = {.id = 5, .nw = 1, .w = {0}, .vals = vals};
    for (int i = 0; i < 100; i++) push_task(e, run_task, &t, NULL, 0, &v, 1, 0, 0, "t");
    ember_var_delete(e, v);
    ember_wait_all(e, -1);
    ember_engine_destroy(e);
    if (bad) fprintf(stderr, "async completion failed\n");
    return bad;
}

static atomic_int release_flag;

/* Set by blocked_op once a worker runs it: a stop must only be tried after that, else a busy
 * machine may not have scheduled the worker yet, and the stop cancels the still-queued op and
 * drains (correctly) instead of meeting a running op that cannot finish. */
static atomic_int blocked_started;

static void wait_blocked_started(void) {
    struct timespec nap = {0, 100000};
    while (!atomic_load(&blocked_started)) nanosleep(&nap, NULL);
}

/* Blocks until released, then lingers, so its worker is still inside when the engine restarts. */
static int blocked_op(void *ctx, ember_opr *op) {
    (void)ctx;
    (void)op;
    atomic_store(&blocked_started, 1);
    struct timespec nap = {0, 200000};
    while (!atomic_load(&release_flag)) nanosleep(&nap, NULL);
    nap.tv_nsec = 3000000;
    nanosleep(&nap, NULL);
    return 0;
}

/* A stop that cannot drain detaches the workers; start makes new ones. The detached worker must
 * leave the pool once its op returns, and destroy must wait for it (else it touches freed memory:
 * ASan and valgrind catch that). Ops pushed after the restart still run. */
static int check_restart(void) {
    int bad = 0;
    for (int round = 0; round < 10; round++) {
        ember_engine *e = ember_engine_create(0, 2, 1);
        ember_var *v = ember_var_new(e), *w = ember_var_new(e);
        atomic_store(&release_flag, 0);
        atomic_store(&blocked_started, 0);
        push_task(e, blocked_op, NULL, NULL, 0, &v, 1, 0, 0, "blocked");
        wait_blocked_started();
        if (ember_engine_stop(e, 5) == 0) bad = 1; /* it cannot drain */
        ember_engine_start(e);
        atomic_store(&release_flag, 1);
        uint64_t vals[NVARS] = {0};
        task t = {.id = 9, .nw = 1, .w = {1}, .vals = vals};
        for (int i = 0; i < 50; i++) push_task(e, run_task, &t, NULL, 0, &w, 1, 0, 0, "after");
        if (ember_wait_var(e, w) != 0 || vals[1] == 0) bad = 1;
        ember_var_delete(e, v);
        ember_var_delete(e, w);
        ember_engine_destroy(e);
    }
    if (bad) fprintf(stderr, "restart after a stop that could not drain failed\n");
    return bad;
}

/* A wait given up before its write ends (ember_wait_end after a poll timed out, as Ctrl-C does in
 * Python): the waiter op still runs later and frees the waiter (ASan/valgrind check it); a wait
 * that is not given up sees the write done; an idle var needs no waiter. */
static int check_abandoned_wait(void) {
    int bad = 0;
    for (int round = 0; round < 20; round++) {
        ember_engine *e = ember_engine_create(0, 2, 1);
        ember_var *v = ember_var_new(e);
        atomic_store(&release_flag, 0);
        atomic_store(&blocked_started, 0);
        push_task(e, blocked_op, NULL, NULL, 0, &v, 1, 0, 0, "blocked");
        ember_waiter *w = ember_wait_begin(e, v);
        if (!w || ember_wait_poll(w, 1) != 0) bad = 1; /* still blocked */
        ember_wait_end(w);                              /* given up: the op frees it */
        ember_waiter *w2 = ember_wait_begin(e, v);
        atomic_store(&release_flag, 1);
        if (!w2 || ember_wait_poll(w2, -1) != 1) bad = 1;
        ember_wait_end(w2);
        if (ember_wait_begin(e, v) != NULL || ember_wait_poll(NULL, 0) != 1) bad = 1;
        ember_wait_end(NULL);
        if (ember_wait_all(e, -1) != 0) bad = 1;
        ember_var_delete(e, v);
        ember_engine_destroy(e);
    }
    if (bad) fprintf(stderr, "abandoned waits failed\n");
    return bad;
}

/* Ops run in one session by a worker while the engine cancels (a stop that could not drain):
 * the same rules as for a single op (op_start): an EMBER_ON_ERROR op still runs, told it failed,
 * a plain one is dropped; both end with EMBER_ERR_CANCELLED on what they write. */
static int cancel_probe(void *ctx, ember_opr *op) {
    *(int *)ctx = 1 + ember_op_input_failed(op); /* 2: ran, told it was cancelled */
    return 0;
}

static atomic_int dropped;
static void count_drop(void *ctx) {
    (void)ctx;
    atomic_fetch_add(&dropped, 1);
}

static int check_batch_under_cancel(void) {
    enum { K = 6 };
    ember_engine *e = ember_engine_create(0, 1, 1); /* one worker: the probes queue behind the block */
    ember_set_session(e, cancel_probe, session_enter, session_leave, count_drop);
    atomic_store(&dropped, 0);
    atomic_store(&session_faults, 0);
    ember_var *v = ember_var_new(e), *w[K];
    int ran[K] = {0};
    atomic_store(&release_flag, 0);
    atomic_store(&blocked_started, 0);
    push_task(e, blocked_op, NULL, NULL, 0, &v, 1, 0, 0, "blocked");
    wait_blocked_started();
    for (int i = 0; i < K; i++) {
        w[i] = ember_var_new(e);
        ember_var *vars[1] = {w[i]};
        const ember_op_attrs a = {0, 0, EMBER_PROP_NORMAL, i % 2 ? EMBER_ON_ERROR : 0, "probe", 0};
        ember_push(e, cancel_probe, &ran[i], vars, 0, 1, &a);
    }
    int bad = ember_engine_stop(e, 5) == 0; /* cannot drain: the probes are cancelled */
    atomic_store(&release_flag, 1);         /* the (detached) worker runs them in one session */
    if (ember_wait_all(e, 10000) == -1) bad = 1;
    for (int i = 0; i < K; i++) {
        if (ran[i] != (i % 2 ? 2 : 0) || ember_var_error(w[i]) != EMBER_ERR_CANCELLED) bad = 1;
    }
    if (atomic_load(&dropped) != K / 2 || atomic_load(&session_faults) != 0) bad = 1; /* the plain ones */
    ember_engine_start(e);
    ember_var_delete(e, v);
    for (int i = 0; i < K; i++) ember_var_delete(e, w[i]);
    ember_engine_destroy(e);
    if (bad) fprintf(stderr, "a session under cancellation broke op_start's rules\n");
    return bad;
}

/* An op run under the idle claim that pushes ops and waits for them (a Custom op's forward): no
 * worker may start an op while the claim is held, so the owner runs each op it pushes itself, in
 * push order, before the push returns; waiting on them then returns at once. */
static int ran_order[8], nran;

static int record_run(void *ctx, ember_opr *op) {
    (void)op;
    ran_order[nran++] = *(int *)ctx;
    return 0;
}

static int check_pushes_under_idle_claim(void) {
    int bad = 0, ids[3] = {1, 2, 3};
    ember_engine *e = ember_engine_create(0, 2, 1);
    ember_var *v = ember_var_new(e);
    ember_wait_all(e, -1);
    nran = 0;
    if (!ember_claim_idle(e)) bad = 1;
    for (int i = 0; !bad && i < 3; i++) {
        push_task(e, record_run, &ids[i], &v, i == 1, &v, 1, 0, 0, "inner"); /* the 2nd reads v too */
        if (nran != i + 1 || ran_order[i] != ids[i]) bad = 1; /* ran here, before the push returned */
    }
    if (!bad && ember_wait_var(e, v) != 0) bad = 1;
    ember_release_idle_ok(e);
    ember_var_delete(e, v);
    ember_engine_destroy(e);
    if (bad) fprintf(stderr, "ops pushed under the idle claim did not run in its owner\n");
    return bad;
}

/* fork() right after a stop that could not drain: the child has none of the parent's workers, not
 * even the detached one, so start_in_child forgets them; a later joining stop must not wait for
 * them (alarm() turns such a hang into a failure). */
static int check_fork_after_stuck_stop(void) {
    ember_engine *e = ember_engine_create(0, 2, 1);
    ember_var *v = ember_var_new(e), *w = ember_var_new(e);
    atomic_store(&release_flag, 0);
    atomic_store(&blocked_started, 0);
    push_task(e, blocked_op, NULL, NULL, 0, &v, 1, 0, 0, "blocked");
    wait_blocked_started();
    int bad = ember_engine_stop(e, 5) == 0;
    atomic_store(&release_flag, 1);
    ember_wait_var(e, v);
    /* its completion is counted too (pending 0: an op still running in a parent thread at the fork
     * could never finish in the child); the detached worker is (probably) still leaving */
    ember_wait_all(e, 10000);
    /* The detached workers have left the pool, but their threads may still be exiting: a
     * sanitizer's runtime holds its thread-registry lock meanwhile, and a fork at that moment
     * leaves the child's copy locked for good (the child's pthread_create would hang there: a
     * limit of ASan/valgrind, not of the engine). Give them time to finish exiting. */
    struct timespec settle = {0, 100000000};
    nanosleep(&settle, NULL);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);
        ember_engine_start_in_child(e);
        uint64_t vals[NVARS] = {0};
        task t = {.id = 11, .nw = 1, .w = {2}, .vals = vals};
        push_task(e, run_task, &t, NULL, 0, &w, 1, 0, 0, "child");
        if (ember_wait_var(e, w) != 0) _exit(3);
        if (vals[2] == 0) _exit(4);
        _exit(ember_engine_stop(e, -1) == 0 ? 0 : 5);
    }
    ember_engine_start(e);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) bad = 1;
    ember_var_delete(e, v);
    ember_var_delete(e, w);
    ember_engine_destroy(e);
    if (bad)
        fprintf(stderr, "restart in a forked child after a stop that could not drain failed (child %s %d)\n",
                WIFSIGNALED(status) ? "killed by signal" : "exit status",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return bad;
}

typedef struct {
    unsigned char *buf;
    int value;
} fill_args;

/* Fills a buffer after a short nap, so the copies pushed behind it are made ready by this worker. */
static int fill_op(void *ctx, ember_opr *op) {
    (void)op;
    fill_args *f = ctx;
    struct timespec nap = {0, 100000};
    nanosleep(&nap, NULL);
    memset(f->buf, f->value, 4096);
    return f->value == 0xEE ? 7 : 0; /* 0xEE: this fill fails */
}

static int check_host_copy(int naive) {
    enum { N = 4096, ROUNDS = 200 };
    ember_engine *e = ember_engine_create(naive, 2, 1);
    ember_var *sv = ember_var_new(e), *dv = ember_var_new(e), *ev = ember_var_new(e);
    static unsigned char src[N], dst[N], dst2[N];
    int64_t before = ember_host_copies_done();
    int bad = 0;
    fill_args fills[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) { /* fill, then copy: each copy sees its own fill */
        fills[i].buf = src;
        fills[i].value = 1 + i % 200;
        push_task(e, fill_op, &fills[i], NULL, 0, &sv, 1, 0, EMBER_PROP_NORMAL, "fill");
        if (ember_push_host_copy(e, src, dst, N, sv, dv, 0, "copy") != 0) bad = 1;
        ember_push_host_copy(e, dst, dst2, N, dv, ev, 0, "copy2");
        if (ember_wait_var(e, ev) != 0 || dst2[0] != fills[i].value || dst2[N - 1] != fills[i].value) bad = 1;
    }
    /* ready at push: runs before the call returns */
    memset(src, 0x42, N);
    if (ember_push_host_copy(e, src, dst, N, sv, dv, 0, "copy_now") != 0 || (!naive && dst[7] != 0x42)) bad = 1;
    ember_wait_var(e, dv);
    if (dst[7] != 0x42) bad = 1;
    /* a failed input: nothing copied, the output keeps the error, the copy still counts */
    fill_args failing = {src, 0xEE};
    push_task(e, fill_op, &failing, NULL, 0, &sv, 1, 0, EMBER_PROP_NORMAL, "fill_fails");
    memset(dst, 0x11, N);
    ember_push_host_copy(e, src, dst, N, sv, dv, 0, "copy_failed");
    if (ember_wait_var(e, dv) == 0 || dst[0] != 0x11) bad = 1;
    ember_wait_all(e, -1);
    if (ember_host_copies_done() - before != 2 * ROUNDS + 2) bad = 1;
    if (ember_push_host_copy(e, src, dst, N, sv, sv, 0, "same") != -100 ||
        ember_push_host_copy(e, NULL, dst, N, sv, dv, 0, "null") != -100)
        bad = 1;
    ember_var_delete(e, sv);
    ember_var_delete(e, dv);
    ember_var_delete(e, ev);
    ember_engine_destroy(e);
    if (bad) fprintf(stderr, "host copies failed (naive %d)\n", naive);
    return bad;
}

static ember_opr *gate_op;
static atomic_int behind_gate_runs;

static int count_run(void *ctx, ember_opr *op) {
    (void)ctx;
    (void)op;
    atomic_fetch_add(&behind_gate_runs, 1);
    return 0;
}

static int hold_gate(void *ctx, ember_opr *op) {
    (void)ctx;
    gate_op = op; /* completed by the pusher, after its pushes */
    return EMBER_PENDING;
}

/* The run-ahead bound: a pusher calling ember_run_ahead_wait never leaves more than the bound
 * pending, the chain's result is the serial one; and a backlog behind an op that only the pusher
 * can end stops the waiting instead of hanging it.  The same for ember_run_ahead_drain. */
static int check_run_ahead(void) {
    enum { N = 3000, LIMIT = 16 };
    ember_engine *e = ember_engine_create(0, 2, 1);
    ember_set_run_ahead(e, LIMIT);
    ember_var *v = ember_var_new(e);
    static uint64_t vals[NVARS], want[NVARS];
    memset(vals, 0, sizeof vals);
    memset(want, 0, sizeof want);
    static task ts[N];
    int bad = ember_get_run_ahead(e) != LIMIT;
    int64_t most = 0;
    for (int i = 0; i < N; i++) {
        ts[i] = (task){.id = i, .nr = 1, .r = {1}, .nw = 1, .w = {0}, .vals = vals};
        apply(&ts[i], want);
        push_task(e, run_task, &ts[i], NULL, 0, &v, 1, 0, 0, "chain");
        ember_run_ahead_wait(e);
        ember_stats st;
        ember_get_stats(e, &st);
        if (st.pending > most) most = st.pending;
    }
    ember_wait_all(e, -1);
    bad |= most > LIMIT || vals[0] != want[0];
    /* behind a gate only this thread opens: the waits give up (50 ms without progress), no hang */
    gate_op = NULL;
    push_task(e, hold_gate, NULL, NULL, 0, &v, 1, 0, EMBER_PROP_ASYNC, "gate");
    for (int i = 0; i < 200; i++) {
        push_task(e, count_run, NULL, &v, 1, NULL, 0, 0, 0, "behind_gate");
        ember_run_ahead_wait(e);
    }
    if (!gate_op || atomic_load(&behind_gate_runs) != 0) bad = 1;
    if (gate_op) ember_complete(gate_op, 0);
    ember_wait_all(e, -1);
    bad |= atomic_load(&behind_gate_runs) != 200;
    ember_set_run_ahead(e, 0);
    bad |= ember_run_ahead_over(e) != 0;
    /* a drain waits for every op pending at the call (nothing else pushes here: none is left) */
    for (int i = 0; i < 500; i++) push_task(e, run_task, &ts[i], NULL, 0, &v, 1, 0, 0, "chain2");
    ember_run_ahead_drain(e);
    ember_stats st;
    ember_get_stats(e, &st);
    bad |= st.pending != 0;
    /* behind a gate only this thread opens: the drain gives up (1 s without an end), no hang */
    gate_op = NULL;
    atomic_store(&behind_gate_runs, 0);
    push_task(e, hold_gate, NULL, NULL, 0, &v, 1, 0, EMBER_PROP_ASYNC, "gate2");
    push_task(e, count_run, NULL, &v, 1, NULL, 0, 0, 0, "behind_gate2");
    ember_run_ahead_drain(e);
    if (!gate_op || atomic_load(&behind_gate_runs) != 0) bad = 1;
    if (gate_op) ember_complete(gate_op, 0);
    ember_wait_all(e, -1);
    bad |= atomic_load(&behind_gate_runs) != 1;
    ember_var_delete(e, v);
    ember_engine_destroy(e);
    if (bad) fprintf(stderr, "run-ahead bound failed (most pending %lld)\n", (long long)most);
    return bad;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    int bad = 0;
    for (int policy = 0; policy <= EMBER_POLICY_CRITICAL_PATH; policy++) {
        bad |= check_dag(n, 0, policy, 7u + (unsigned)policy, 0);
    }
    bad |= check_dag(n, 0, EMBER_POLICY_PRIORITY, 31u, 1);
    bad |= check_dag(n / 4, 1, 0, 99u, 0);
    bad |= check_errors();
    bad |= check_clear_error();
    bad |= check_async(0);
    bad |= check_async(1);
    bad |= check_restart();
    bad |= check_abandoned_wait();
    bad |= check_batch_under_cancel();
    bad |= check_pushes_under_idle_claim();
    bad |= check_fork_after_stuck_stop();
    bad |= check_host_copy(0);
    bad |= check_host_copy(1);
    bad |= check_run_ahead();
    printf("engine stress: %s (%d ops per DAG)\n", bad ? "FAILED" : "ok", n);
    return bad;
}
