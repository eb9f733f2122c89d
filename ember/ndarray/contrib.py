"""`mx.nd.contrib`: the registry's `_contrib_*` operators (`mx.nd.contrib.div_sqrt_dim` is `_contrib_div_sqrt_dim`)."""
from ._prefixed import resolver

__getattr__, __dir__ = resolver("contrib", ("_contrib_",))
