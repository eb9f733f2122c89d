"""`mx.contrib`: MXNet's contributed namespaces. `mx.contrib.ndarray` / `mx.contrib.symbol` are the
contrib operators (`mx.nd.contrib`, `mx.sym.contrib`); `mx.contrib.amp` is importable but ember does
not implement automatic mixed precision yet (its functions raise); `mx.contrib.text` is MXNet's token
counting, vocabulary and embedding helpers and `mx.contrib.autograd` MXNet's older autograd API;
`mx.contrib.svrg_optimization` is SVRG training (SVRGModule); `mx.contrib.io.DataLoaderIter` is a Gluon
DataLoader as an `mx.io.DataIter`."""
from . import amp  # noqa: F401
from . import autograd  # noqa: F401
from . import io  # noqa: F401
from . import ndarray  # noqa: F401
from . import ndarray as nd  # noqa: F401
from . import symbol  # noqa: F401
from . import symbol as sym  # noqa: F401
from . import text  # noqa: F401
from . import svrg_optimization  # noqa: F401
