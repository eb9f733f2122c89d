/* thread_pool.h: parallel_for covers every item exactly once for team sizes 1..5 and ranges
 * around the grain; regions back to back (helpers spinning) and after the helpers went to sleep;
 * chunk numbers within the team and never two alike at once; ember_pool_prewake wakes sleeping helpers
 * and regions between prewakes still cover; a nested region and a second thread's region run serially while the team is held; BLAS-style
 * regions whose jobs wait for each other (each must have a thread of its own), with more jobs
 * than the team size, and from two threads at once; a fork child starts helpers of its own;
 * shutdown joins every helper (run under ASan + UBSan and valgrind by `make memcheck`). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "thread_pool.h"

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

typedef struct {
    atomic_int *hits;
    size_t offset;
    atomic_int busy[64];
    atomic_int top; /* the highest chunk number seen */
} cover_ctx;

static void cover(void *ctx, size_t b, size_t e, int chunk) {
    cover_ctx *c = ctx;
    if (chunk < 0 || chunk >= ember_pool_threads()) FAIL("chunk %d of a team of %d", chunk, ember_pool_threads());
    if (atomic_fetch_add(&c->busy[chunk], 1) != 0) FAIL("chunk %d run twice at once", chunk);
    for (int top = atomic_load(&c->top); chunk > top && !atomic_compare_exchange_weak(&c->top, &top, chunk);) {}
    for (size_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i + c->offset], 1);
    atomic_fetch_sub(&c->busy[chunk], 1);
}

static void check_cover(size_t n, size_t grain) {
    atomic_int *hits = calloc(n + 1, sizeof *hits);
    cover_ctx c = {.hits = hits};
    ember_parallel_for(n, grain, 0, cover, &c);
    for (size_t i = 0; i < n; i++) atomic_store(&hits[i], 0);
    atomic_store(&c.top, 0);
    ember_parallel_for(n, grain, 2, cover, &c); /* at most 2 chunks */
    if (atomic_load(&c.top) > 1) FAIL("chunk %d beyond max_chunks 2", atomic_load(&c.top));
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&hits[i]) != 1) FAIL("max_chunks 2, n=%zu: item %zu run %d times", n, i, atomic_load(&hits[i]));
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&hits[i]) != 1) FAIL("n=%zu grain=%zu: item %zu run %d times", n, grain, i, atomic_load(&hits[i]));
    free(hits);
}

/* A region inside a region runs serially on the thread that opened it. */
static atomic_int nested_ok;
static void inner(void *ctx, size_t b, size_t e, int chunk) { (void)ctx; (void)chunk; if (b != 0 || e != 10) atomic_store(&nested_ok, 0); }
static void outer(void *ctx, size_t b, size_t e, int chunk) {
    (void)ctx; (void)b; (void)e; (void)chunk;
    ember_parallel_for(10, 1, 0, inner, NULL);
}

/* BLAS-style jobs: job i sets its flag, then waits for every other job's (OpenBLAS's level-3 jobs
 * wait for each other's packed panels): they finish only if all run at once. */
typedef struct {
    atomic_int flags[16];
    atomic_int slots_seen[16];
    int n;
} meet_ctx;

static void meet(int slot, void *data, int arg) {
    meet_ctx *m = *(meet_ctx **)data;
    if (arg != 7) FAIL("dojob_data %d, not 7", arg);
    atomic_fetch_add(&m->slots_seen[slot], 1);
    atomic_store(&m->flags[slot], 1);
    time_t start = time(NULL);
    for (int j = 0; j < m->n; j++)
        while (!atomic_load(&m->flags[j])) {
            sched_yield(); /* valgrind runs one thread at a time */
            if (time(NULL) - start > 60) FAIL("job %d waited for job %d: the jobs did not run at once", slot, j);
        }
}

static void blas_region(int numjobs) {
    meet_ctx m;
    memset(&m, 0, sizeof m);
    m.n = numjobs;
    meet_ctx *data[16];
    for (int i = 0; i < numjobs; i++) data[i] = &m;
    ember_pool_blas_callback(1, meet, numjobs, sizeof data[0], data, 7);
    for (int i = 0; i < numjobs; i++)
        if (atomic_load(&m.slots_seen[i]) != 1) FAIL("slot %d seen %d times", i, atomic_load(&m.slots_seen[i]));
}

static void *blas_thread(void *arg) {
    for (int r = 0; r < *(int *)arg; r++) blas_region(2 + r % 3);
    return NULL;
}

static void *cover_thread(void *arg) {
    for (int r = 0; r < *(int *)arg; r++) check_cover(1000 + (size_t)r % 7, 10);
    return NULL;
}

/* The team is held by a BLAS region: a kernel's region from another thread runs serially. */
static atomic_int held, release_held;
static void hold(int slot, void *data, int arg) {
    (void)data; (void)arg;
    if (slot) return;
    atomic_store(&held, 1);
    while (!atomic_load(&release_held)) sched_yield();
}
static void *holder(void *arg) {
    (void)arg;
    int dummy[2];
    ember_pool_blas_callback(1, hold, 2, sizeof dummy[0], dummy, 0);
    return NULL;
}
static pthread_t serial_caller;
static atomic_int serial_ok;
static void on_caller(void *ctx, size_t b, size_t e, int chunk) {
    (void)ctx;
    if (chunk == 0 && b == 0 && e == 100 && pthread_equal(pthread_self(), serial_caller)) atomic_store(&serial_ok, 1);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    for (int size = 1; size <= 5; size++) {
        ember_pool_set_threads(size);
        if (ember_pool_threads() != size) FAIL("threads %d, set %d", ember_pool_threads(), size);
        size_t ns[] = {0, 1, 9, 10, 11, 19, 20, 21, 99, 1000, 12345};
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) check_cover(ns[k], 10);
    }
    ember_pool_set_threads(0);
    if (ember_pool_threads() != 1) FAIL("threads below 1 not clamped");
    ember_pool_set_threads(1000);
    if (ember_pool_threads() != 64) FAIL("threads above 64 not clamped");

    ember_pool_set_threads(3);
    long long before = ember_pool_helper_jobs();
    for (int r = 0; r < rounds; r++) check_cover(300 + (size_t)r % 50, 100);
    if (ember_pool_helper_jobs() == before) FAIL("no region reached a helper");
    ember_pool_set_spin_us(0); /* helpers sleep at once: every region wakes them */
    for (int r = 0; r < rounds / 10; r++) check_cover(1000, 100);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    check_cover(1000, 100);
    /* prewake: sleeping helpers wake (and sleep again at once, spin 0); regions still cover */
    long long woken = ember_pool_nudged_wakes();
    ember_pool_prewake();
    struct timespec tick = {0, 1000 * 1000};
    for (int tries = 0; ember_pool_nudged_wakes() < woken + 2 && tries < 60000; tries++) nanosleep(&tick, NULL);
    if (ember_pool_nudged_wakes() < woken + 2)
        FAIL("prewake woke %lld of 2 sleeping helpers", ember_pool_nudged_wakes() - woken);
    for (int r = 0; r < rounds / 10; r++) {
        if (r % 3 == 0) ember_pool_prewake();
        check_cover(1000, 100);
    }
    ember_pool_set_spin_us(200);

    atomic_store(&nested_ok, 1);
    ember_parallel_for(4, 1, 0, outer, NULL);
    if (!atomic_load(&nested_ok)) FAIL("a nested region did not run serially");

    for (int r = 0; r < rounds / 10; r++) blas_region(1 + r % 5); /* up to 5 jobs on a team of 3 */

    int per = rounds / 20 + 1;
    pthread_t a, b, c;
    pthread_create(&a, NULL, blas_thread, &per);
    pthread_create(&b, NULL, blas_thread, &per);
    pthread_create(&c, NULL, cover_thread, &per);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(c, NULL);

    pthread_t h;
    pthread_create(&h, NULL, holder, NULL);
    while (!atomic_load(&held)) sched_yield();
    serial_caller = pthread_self();
    ember_parallel_for(100, 1, 0, on_caller, NULL);
    atomic_store(&release_held, 1);
    pthread_join(h, NULL);
    if (!atomic_load(&serial_ok)) FAIL("a region while the team was held did not run on its caller");

    pid_t pid = fork();
    if (pid == 0) {
        before = ember_pool_helper_jobs();
        for (int r = 0; r < 50; r++) check_cover(1000, 10);
        blas_region(3);
        ember_pool_shutdown();
        _exit(ember_pool_helper_jobs() > before ? 0 : 3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) FAIL("the fork child's regions failed (status %d)", status);

    ember_pool_shutdown();
    check_cover(1000, 10); /* the team starts again */
    ember_pool_shutdown();
    printf("thread_pool: ok (%d rounds, %lld helper jobs)\n", rounds, ember_pool_helper_jobs());
    return 0;
}
