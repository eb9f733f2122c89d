/* One process-wide team of CPU threads: thread_pool.h says what it is for.
 *
 * The caller of a parallel region holds `team`, writes the job into `job`, and gives each helper
 * it needs a ticket (the region's number) in that helper's own mailbox; helpers without a ticket
 * stay out, so a slow helper can never read a later region's job as its own.  A helper
 * busy-waits on its mailbox for spin_ns after its last job, then sleeps on `wake`; the caller
 * signals `wake` only when a helper sleeps (`sleepers`: the sequentially consistent store of the
 * ticket and load of the count on one side, increment and ticket load on the other, mean at
 * least one side sees the other).  The caller runs chunk 0 itself and waits for `pending` to
 * reach 0.  ember_pool_prewake bumps `nudges` (and signals `wake` if a helper sleeps) by the same
 * protocol: a helper that sees a new nudge starts its busy-wait afresh.
 */
#define _GNU_SOURCE
#include "thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_TEAM 64

typedef struct {
    ember_range_fn fn; /* a parallel_for, or */
    void *ctx;
    size_t n;
    void (*dojob)(int, void *, int); /* an OpenBLAS region */
    char *jobdata;
    size_t elsize;
    int dojob_data;
    int count; /* chunks, the caller's included */
} job_t;

static pthread_mutex_t team = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static job_t job;
static pthread_t helpers[MAX_TEAM];
static int n_helpers; /* started: helper i (1-based) runs chunk i */
static int team_size = 1;
static atomic_ulong tickets[MAX_TEAM];
static unsigned long first_seen[MAX_TEAM]; /* a helper's mailbox when it was started */
static unsigned long region;
static atomic_int sleepers, pending, stopping;
static atomic_ulong nudges;
static atomic_long spin_ns = 200000;
static atomic_llong helper_jobs, nudged_wakes;
static _Thread_local int in_job;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void run_chunk(int i) {
    if (job.fn) {
        size_t b = job.n * (size_t)i / (size_t)job.count, e = job.n * (size_t)(i + 1) / (size_t)job.count;
        if (b < e) job.fn(job.ctx, b, e, i);
    } else {
        job.dojob(i, job.jobdata + (size_t)i * job.elsize, job.dojob_data);
    }
}

/* The next ticket in helper me's mailbox after `seen`: spin, then sleep (a nudge: spin again). */
static unsigned long next_ticket(int me, unsigned long seen) {
    for (;;) {
        unsigned long nudge = atomic_load_explicit(&nudges, memory_order_relaxed);
        int64_t until = 0;
        for (unsigned spins = 0;; spins++) {
            unsigned long t = atomic_load_explicit(&tickets[me], memory_order_acquire);
            if (t != seen) return t;
            if ((spins & 63) == 63) {
                int64_t now = now_ns();
                unsigned long n = atomic_load_explicit(&nudges, memory_order_relaxed);
                if (!until || n != nudge) {
                    until = now + atomic_load_explicit(&spin_ns, memory_order_relaxed);
                    nudge = n;
                } else if (now >= until) {
                    break;
                }
            }
            CPU_RELAX();
        }
        pthread_mutex_lock(&sleep_lock);
        atomic_fetch_add(&sleepers, 1);
        unsigned long t;
        while ((t = atomic_load(&tickets[me])) == seen && atomic_load(&nudges) == nudge)
            pthread_cond_wait(&wake, &sleep_lock);
        atomic_fetch_sub(&sleepers, 1);
        pthread_mutex_unlock(&sleep_lock);
        if (t != seen) return t;
        atomic_fetch_add_explicit(&nudged_wakes, 1, memory_order_relaxed);
    }
}

static void *helper_main(void *arg) {
    int me = (int)(intptr_t)arg;
    unsigned long seen = first_seen[me]; /* not the mailbox now: its first ticket may be there already */
    in_job = 1; /* a helper never opens a region of its own */
    for (;;) {
        seen = next_ticket(me, seen);
        if (atomic_load(&stopping)) return NULL;
        run_chunk(me);
        atomic_fetch_add_explicit(&helper_jobs, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&pending, 1, memory_order_release);
    }
}

/* After fork only the forking thread exists: the child starts its helpers again on first use. */
static void before_fork(void) {
    pthread_mutex_lock(&team);
    pthread_mutex_lock(&sleep_lock);
}
static void after_fork_parent(void) {
    pthread_mutex_unlock(&sleep_lock);
    pthread_mutex_unlock(&team);
}
static void after_fork_child(void) {
    n_helpers = 0;
    pthread_cond_init(&wake, NULL); /* waiters of the parent's helpers are gone */
    atomic_store(&sleepers, 0);
    atomic_store(&pending, 0);
    pthread_mutex_unlock(&sleep_lock);
    pthread_mutex_unlock(&team);
}
static void register_fork_handlers(void) { pthread_atfork(before_fork, after_fork_parent, after_fork_child); }

/* Starts helpers up to count - 1 (team held); returns how many chunks can run at once. */
static int ensure_helpers(int count) {
    pthread_once(&fork_once, register_fork_handlers);
    if (count > MAX_TEAM) count = MAX_TEAM;
    while (n_helpers < count - 1) {
        int me = n_helpers + 1;
        first_seen[me] = atomic_load(&tickets[me]);
        if (pthread_create(&helpers[me], NULL, helper_main, (void *)(intptr_t)me) != 0) break;
        n_helpers = me;
    }
    return n_helpers + 1 < count ? n_helpers + 1 : count;
}

/* Runs job.count chunks (team held, job written): helpers 1.., the caller chunk 0. */
static void run_region(void) {
    int count = job.count;
    atomic_store_explicit(&pending, count - 1, memory_order_relaxed);
    region++;
    for (int i = 1; i < count; i++) atomic_store(&tickets[i], region);
    if (atomic_load(&sleepers) > 0) {
        pthread_mutex_lock(&sleep_lock);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&sleep_lock);
    }
    in_job = 1;
    run_chunk(0);
    in_job = 0;
    for (unsigned spins = 0; atomic_load_explicit(&pending, memory_order_acquire) > 0; spins++) {
        if ((spins & 1023) == 1023) sched_yield(); /* a helper was preempted: let it run */
        else CPU_RELAX();
    }
}

void ember_parallel_for(size_t n, size_t grain, int max_chunks, ember_range_fn fn, void *ctx) {
    if (grain < 1) grain = 1;
    size_t want = n / grain;
    int size = __atomic_load_n(&team_size, __ATOMIC_RELAXED);
    if (max_chunks > 0 && max_chunks < size) size = max_chunks;
    if (want > (size_t)size) want = (size_t)size;
    if (want < 2 || in_job || pthread_mutex_trylock(&team) != 0) {
        if (n) fn(ctx, 0, n, 0);
        return;
    }
    int count = ensure_helpers((int)want);
    if (count < 2) {
        pthread_mutex_unlock(&team);
        fn(ctx, 0, n, 0);
        return;
    }
    job = (job_t){.fn = fn, .ctx = ctx, .n = n, .count = count};
    run_region();
    pthread_mutex_unlock(&team);
}

void ember_pool_blas_callback(int sync, void (*dojob)(int, void *, int), int numjobs, size_t elsize, void *jobdata,
                              int dojob_data) {
    (void)sync; /* OpenBLAS always waits for its jobs */
    char *data = jobdata;
    if (numjobs < 1) return;
    if (in_job) { /* a job called BLAS: thread_pool.h forbids it; do what can be done */
        for (int i = 0; i < numjobs; i++) dojob(i, data + (size_t)i * elsize, dojob_data);
        return;
    }
    pthread_mutex_lock(&team);
    if (ensure_helpers(numjobs) < numjobs) { /* no thread for each job: they would wait on each other */
        pthread_mutex_unlock(&team);
        for (int i = 0; i < numjobs; i++) dojob(i, data + (size_t)i * elsize, dojob_data);
        return;
    }
    job = (job_t){.dojob = dojob, .jobdata = data, .elsize = elsize, .dojob_data = dojob_data, .count = numjobs};
    run_region();
    pthread_mutex_unlock(&team);
}

void ember_pool_install_blas(void *setter) {
    void (*set)(void (*)(int, void (*)(int, void *, int), int, size_t, void *, int));
    *(void **)&set = setter;
    set(ember_pool_blas_callback);
}

size_t ember_pool_grain(int64_t per_item, int64_t elements) {
    if (per_item < 1) per_item = 1;
    return per_item >= elements ? 1 : (size_t)(elements / per_item);
}

int ember_pool_threads(void) { return __atomic_load_n(&team_size, __ATOMIC_RELAXED); }

void ember_pool_set_threads(int n) {
    __atomic_store_n(&team_size, n < 1 ? 1 : (n > MAX_TEAM ? MAX_TEAM : n), __ATOMIC_RELAXED);
}

void ember_pool_set_spin_us(int us) { atomic_store(&spin_ns, (long)(us < 0 ? 0 : us) * 1000); }

void ember_pool_prewake(void) {
    atomic_fetch_add(&nudges, 1);
    if (atomic_load(&sleepers) > 0) {
        pthread_mutex_lock(&sleep_lock);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&sleep_lock);
    }
}

long long ember_pool_nudged_wakes(void) { return atomic_load(&nudged_wakes); }

long long ember_pool_helper_jobs(void) { return atomic_load(&helper_jobs); }

void ember_pool_shutdown(void) {
    pthread_mutex_lock(&team);
    atomic_store(&stopping, 1);
    region++;
    for (int i = 1; i <= n_helpers; i++) atomic_store(&tickets[i], region);
    pthread_mutex_lock(&sleep_lock);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&sleep_lock);
    for (int i = 1; i <= n_helpers; i++) pthread_join(helpers[i], NULL);
    n_helpers = 0;
    atomic_store(&stopping, 0);
    pthread_mutex_unlock(&team);
}
