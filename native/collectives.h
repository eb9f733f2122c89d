/* ember's native collective queue: allreduces as engine ops, run over MPI by one C thread.
 *
 * Every process of a job issues the same collectives in the same program order,
 * but the engine makes their ops ready in whatever order their inputs finish.
 * MPI needs the same order on every rank, so each call takes a sequence number
 * when it is issued (ember_coll_allreduce, in program order) and the queue's
 * thread posts the calls strictly in that order, as their engine ops become
 * ready, keeping at most `window` requests in flight.  The thread tests the
 * oldest request, finishes calls in order and completes their engine ops, all
 * without the GIL: a call costs one push from Python and nothing else there.
 *
 * The MPI library is not linked in: the caller hands over the entry points of
 * the library its process already loaded (MPI_Iallreduce, MPI_Test) and the
 * handles to use, so the C core builds and is tested without MPI (the stress
 * test drives it with a fake MPI).  Handles are passed widened to intptr_t and
 * handle_size (4: MPICH's int handles, 8: Open MPI's pointers) says which
 * signature the entry points have.
 *
 * Failures (an MPI error code, no progress for timeout_s, a peer reported dead
 * by `check`, a pushed value that carries an error) fail the call with the
 * error id `check` returns; every later call then fails too (the ranks no
 * longer agree on what comes next), each with an id of its own.
 */
#ifndef EMBER_COLLECTIVES_H
#define EMBER_COLLECTIVES_H

#include <stdint.h>

#include "engine.h"

typedef struct ember_coll ember_coll;

/* Why `check` is called; it returns an error id (> 0) to fail the named call, or 0. */
enum {
    EMBER_COLL_WAITING = 0,      /* a request is still pending (every check_every_s): 0 = keep waiting */
    EMBER_COLL_TIMEOUT = 1,      /* no progress for timeout_s */
    EMBER_COLL_MPI_ERROR = 2,    /* an MPI call returned `code` */
    EMBER_COLL_INPUT_FAILED = 3, /* the value to reduce carries an error: the op keeps that error and
                                    the calls after it fail (the result is ignored) */
    EMBER_COLL_STOPPED = 4       /* an earlier call failed */
};
typedef int (*ember_coll_check_fn)(void *ctx, const char *name, int why, int code);

typedef struct {
    void *iallreduce;   /* int MPI_Iallreduce(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *) */
    void *test;         /* int MPI_Test(MPI_Request *, int *, MPI_Status *) */
    int handle_size;    /* sizeof(MPI_Comm) == sizeof(MPI_Request): 4 or 8 */
    intptr_t comm;      /* the communicator (the queue should have it to itself) */
    intptr_t op_sum;    /* MPI_SUM */
    intptr_t in_place;  /* MPI_IN_PLACE */
} ember_mpi_fns;

/* Starts the queue's thread.  NULL on bad arguments.  check_every_s: how often `check` is asked
 * while a request is pending (it is never called while requests complete promptly). */
ember_coll *ember_coll_create(ember_engine *e, const ember_mpi_fns *mpi, int window, int64_t chunk_bytes,
                              double spin_s, double timeout_s, double check_every_s,
                              ember_coll_check_fn check, void *check_ctx);

/* Issues an allreduce (sum) of `count` elements of `dtype` (elem_size bytes each) from `send`
 * (NULL: in place in `recv`) into `recv`, then, if copy_to is not NULL, copies the result into
 * copy_to; as an engine op reading `reads` and writing `writes`.  The buffers must stay valid
 * until ember_coll_finished() passes the returned sequence number (for good, once a call failed:
 * requests in flight are abandoned then, not cancelled).  Returns that number (>= 0), or -1 after
 * ember_coll_stop, -2 on bad arguments. */
int64_t ember_coll_allreduce(ember_coll *c, const void *send, void *recv, int64_t count, intptr_t dtype,
                             int elem_size, void *copy_to, ember_var *const *reads, int nread,
                             ember_var *const *writes, int nwrite, int priority, const char *name);

/* How many calls have finished (they finish in sequence order, failed ones included). */
int64_t ember_coll_finished(ember_coll *c);
/* The most requests that were ever in flight at once. */
int ember_coll_max_in_flight(ember_coll *c);

/* Takes no new calls; waits up to timeout_ms (< 0: for ever) for every issued call to finish
 * and the thread to exit.  0: done, ember_coll_destroy may follow; -1: calls are still
 * outstanding (an op never became ready), the thread exits once they finish. */
int ember_coll_stop(ember_coll *c, int timeout_ms);
/* Stops (waiting for ever if need be) and frees the queue. */
void ember_coll_destroy(ember_coll *c);

#endif
