/* Host copies as engine ops, for kvstore pulls.
 *
 * A pull copies a key's stored value into an output once the store's last write
 * (an allreduce, an update) is done.  As a Python op that costs a hand-off to a
 * worker thread, the GIL and a Python call per key.  Pushed here it is an async
 * engine op: it runs in the thread that makes it ready, usually the one that
 * completed the store's write (the native collective queue's thread, right after
 * the allreduce), as a plain memcpy without the GIL; one that is ready at push
 * runs in the pushing thread before ember_push_host_copy returns.
 *
 * The op also runs when its input failed or the engine cancelled it
 * (EMBER_ON_ERROR): it then copies nothing and its output keeps the error.
 * Either way it counts itself in ember_host_copies_done(), so the caller knows
 * when every copy it issued is over and the buffers it kept alive may go.
 */
#ifndef EMBER_HOST_COPY_H
#define EMBER_HOST_COPY_H

#include <stdint.h>

#include "engine.h"

/* Push a copy of `nbytes` from `src` into `dst` (which must not overlap) as an op
 * reading `src_var` and writing `dst_var` (distinct variables).  Returns 0, or
 * ember_push's negative code (nothing was pushed), or -100 on bad arguments. */
int ember_push_host_copy(ember_engine *e, const void *src, void *dst, int64_t nbytes, ember_var *src_var,
                         ember_var *dst_var, int priority, const char *name);

/* How many pushed host copies have run (or been dropped as failed) in this process. */
int64_t ember_host_copies_done(void);

#endif
