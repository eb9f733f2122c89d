"""ember's dependency engine (native C core, called through cffi).

    Var(name=None)                        an engine variable (any resource); .wait(), .delete()
    push(fn, read, write, priority=0, device=None, name=None, prop='normal', inline=False, on_error=False,
         mem_bytes=0)
    push_native(c_fn, ctx, read, write, ...)   a C kernel, run without the GIL
    wait(var), wait_all(timeout=None)
    set_policy(name_or_obj), get_policy()
    bulk(size) / set_bulk_size(n)
    set_run_ahead(max_pending), get_run_ahead()   how far a pushing thread may run ahead of the workers
    set_run_ahead_bytes(nbytes), get_run_ahead_bytes()   ... and with how much fresh memory
    set_engine_type('ThreadedEngine' | 'NaiveEngine'), engine_type()
    stats()

See docs/engine.md for the dependency rules, error propagation and policies; the in-caller
protocol (`core.run_in_caller`, internal) and the API for native components
(`ember.engine.native`) are described there too.
"""
from .core import (Var, bulk, engine_type, get_policy, get_run_ahead, get_run_ahead_bytes, push,  # noqa: F401
                   push_native, set_bulk_size, set_engine_type, set_policy, set_run_ahead, set_run_ahead_bytes,
                   stats, wait, wait_all, wait_all_quiet)
from .blas import set_blas_threads  # noqa: F401
from . import cpu_team  # noqa: F401
from .policy import PythonPolicy  # noqa: F401
