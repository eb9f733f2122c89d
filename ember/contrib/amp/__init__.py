"""`mx.contrib.amp`: MXNet's automatic mixed precision API, not implemented by ember yet."""
from .amp import *  # noqa: F401,F403
