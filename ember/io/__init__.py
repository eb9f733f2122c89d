"""`mx.io`: data descriptions, batches and in-memory data iterators."""
from .csv_iter import CSVIter  # noqa: F401
from .data import DataBatch, DataDesc, DataIter  # noqa: F401
from .ndarray_iter import NDArrayIter  # noqa: F401
