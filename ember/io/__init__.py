"""`mx.io`: data descriptions, batches, and iterators over in-memory arrays, CSV and LIBSVM files."""
from .csv_iter import CSVIter  # noqa: F401
from .data import DataBatch, DataDesc, DataIter  # noqa: F401
from .libsvm_iter import LibSVMIter  # noqa: F401
from .ndarray_iter import NDArrayIter  # noqa: F401
