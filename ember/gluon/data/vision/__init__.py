"""`mx.gluon.data.vision`: image datasets and transforms."""
from .datasets import *  # noqa: F401,F403
from . import transforms  # noqa: F401
