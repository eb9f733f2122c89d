/* One process-wide team of CPU threads for the parallel parts of ember's kernels and of BLAS.
 *
 * Without it a training step on CPU keeps two kinds of thread busy: OpenBLAS's own pool, whose
 * helper threads busy-wait (about 0.1 s, without yielding) after every call for the next one,
 * and ember's kernels, which then run on the caller alone because the core they could use is
 * held by that spinning thread.  Here one team does both: OpenBLAS hands it its parallel regions
 * through its threads callback (openblas_set_threads_callback_function, OpenBLAS >= 0.3.27;
 * ember.engine.cpu_threads installs it), and the kernels split their loops with
 * ember_parallel_for.  A helper busy-waits briefly after a job (the gaps between a step's
 * kernels are short), then sleeps on a condition variable.
 *
 * Jobs are C only: a job must not call BLAS or ember_parallel_for again (such a nested call
 * runs serially, see below) and must not take the GIL.
 */
#ifndef EMBER_THREAD_POOL_H
#define EMBER_THREAD_POOL_H

#include <stddef.h>
#include <stdint.h>

/* A kernel's loop body over items [begin, end).  `chunk` (below the max_chunks given and the
 * team's size) is unique among the chunks running at once: per-thread scratch is indexed by it. */
typedef void (*ember_range_fn)(void *ctx, size_t begin, size_t end, int chunk);

/* Runs fn over [0, n) split into contiguous chunks of at least `grain` items, at most
 * `max_chunks` of them (0: no limit but the team's size), the first on the calling thread;
 * returns when every chunk is done.  Runs the whole range on the caller (chunk 0) when it is too
 * small to split, when called from a job, or when another thread holds the team (a kernel never
 * waits for the team). */
void ember_parallel_for(size_t n, size_t grain, int max_chunks, ember_range_fn fn, void *ctx);

/* The elements a chunk of a memory-bound element-wise loop should have at least: below that, waking
 * a helper costs more than the work it takes over. */
#define EMBER_PARALLEL_GRAIN 32768

/* The grain, in items, of a loop whose items hold `per_item` elements each (below 1 counts as 1):
 * enough items for `elements` elements a chunk, and at least 1. */
size_t ember_pool_grain(int64_t per_item, int64_t elements);

/* The number of threads a parallel_for may use, the caller included (>= 1). */
int ember_pool_threads(void);

/* Sets that number (clamped to 1..64); helpers start on first use.  1 runs every loop serially. */
void ember_pool_set_threads(int n);

/* The busy-wait, in microseconds, of a helper after a job before it sleeps (default 200). */
void ember_pool_set_spin_us(int us);

/* Wakes the helpers that sleep and restarts every helper's busy-wait, without waiting: a caller
 * about to run products soon (a graph's forward or backward) calls it first, so that waking a
 * sleeping helper (tens of microseconds where an idle CPU is parked) overlaps the work before. */
void ember_pool_prewake(void);

/* OpenBLAS's threads callback: runs dojob(slot, jobdata + i * elsize, dojob_data) for every i <
 * numjobs at once (OpenBLAS's jobs wait for each other, so each gets its own thread; slot i is
 * OpenBLAS's per-thread buffer index), the first on the caller.  It waits for the team when
 * another thread holds it. */
void ember_pool_blas_callback(int sync, void (*dojob)(int, void *, int), int numjobs, size_t elsize, void *jobdata,
                              int dojob_data);

/* Installs ember_pool_blas_callback through the library's setter (a function pointer to
 * openblas_set_threads_callback_function or its suffixed name). */
void ember_pool_install_blas(void *setter);

/* How many jobs the helpers have run since the process started (tests). */
long long ember_pool_helper_jobs(void);

/* How many times a sleeping helper was woken by ember_pool_prewake (tests). */
long long ember_pool_nudged_wakes(void);

/* Stops and joins the helpers (tests and memcheck; the team starts again on next use). */
void ember_pool_shutdown(void);

#endif
