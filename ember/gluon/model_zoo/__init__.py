"""`gluon.model_zoo`: predefined networks (`vision`) and the store of their pretrained weights
(`model_store`), as in MXNet 1.9.1."""
from . import model_store  # noqa: F401
from . import vision  # noqa: F401
