"""`mx.nd.linalg`: the registry's linear-algebra operators (`mx.nd.linalg.gemm2` is `_linalg_gemm2`)."""
from ._prefixed import resolver

__getattr__, __dir__ = resolver("linalg", ("_linalg_", "linalg_"), globals())
