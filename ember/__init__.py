"""ember: an MXNet 1.x-compatible dataflow engine for machine learning (`import ember as mx`)."""
from __future__ import annotations

__version__ = "0.1.0"

from . import base  # noqa: F401
from .base import EmberError, MXNetError  # noqa: F401
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus  # noqa: F401
from . import engine  # noqa: F401
from . import memory  # noqa: F401  (storage managers: mx.memory.stats())
from . import ops  # noqa: F401
from . import ndarray  # noqa: F401,E402
from . import ndarray as nd  # noqa: F401,E402
from . import autograd, random  # noqa: F401,E402
from . import profiler  # noqa: F401
from . import kvstore  # noqa: F401,E402
from . import kvstore as kv  # noqa: F401,E402
from . import symbol  # noqa: F401,E402
from . import symbol as sym  # noqa: F401,E402
from .symbolic import naming as name  # noqa: F401,E402  (mx.name.Prefix / NameManager)
from .symbolic.naming import AttrScope  # noqa: F401,E402
from .symbolic import naming as attribute  # noqa: F401,E402  (mx.attribute.AttrScope)
from . import viz  # noqa: F401,E402
# training toolkit (MXNet's top-level modules)
from . import optimizer, lr_scheduler, initializer, io, metric, model, callback, module, gluon  # noqa: F401,E402
from . import initializer as init  # noqa: F401,E402
from . import module as mod  # noqa: F401,E402
from . import test_utils  # noqa: F401,E402  (mx.test_utils, as MXNet users' test suites import it)
from . import rnn  # noqa: F401,E402  (legacy symbolic RNN cells: mx.rnn)
from . import monitor, operator  # noqa: F401,E402
from . import monitor as mon  # noqa: F401,E402
from . import util  # noqa: F401,E402  (NumPy shape/array semantics switches, env access)
from . import recordio  # noqa: F401,E402  (mx.recordio: MXNet's .rec/.idx files)
from . import image  # noqa: F401,E402  (mx.image: decoding, augmenters, ImageIter, detection)
img = image  # MXNet's short alias mx.img
from .util import (is_np_array, is_np_shape, np_array, np_shape, set_np_shape, use_np,  # noqa: F401,E402
                   use_np_array, use_np_shape)
from . import numpy  # noqa: F401,E402  (mx.np: the numpy interface's ndarray and creation)
from . import numpy as np  # noqa: F401,E402
from .numpy import extension as numpy_extension  # noqa: F401,E402  (mx.npx)
from .numpy import extension as npx  # noqa: F401,E402
from . import numpy_dispatch_protocol  # noqa: F401,E402  (numpy functions on mx.np arrays run mx.np's)
from . import numpy_op_signature  # noqa: F401,E402  (signatures of the _np_* operators' functions)

from . import contrib  # noqa: F401,E402  (mx.contrib: contrib operator namespaces, amp)
from . import runtime  # noqa: F401,E402  (mx.runtime.Features: what this installation can do)
# Last, once every module (and the BLAS libraries they load) is imported: EMBER_BLAS_THREADS, and
# BLAS's parallel regions handed to ember's CPU team.
engine.blas.configure()
engine.cpu_team.install()
