"""`mx.contrib`: MXNet's contributed namespaces. `mx.contrib.ndarray` / `mx.contrib.symbol` are the
contrib operators (`mx.nd.contrib`, `mx.sym.contrib`); `mx.contrib.amp` is importable but ember does
not implement automatic mixed precision yet (its functions raise)."""
from . import amp  # noqa: F401
from . import ndarray  # noqa: F401
from . import ndarray as nd  # noqa: F401
from . import symbol  # noqa: F401
from . import symbol as sym  # noqa: F401
