"""`mx.nd.image`: the registry's `_image_*` operators (`mx.nd.image.to_tensor` is `_image_to_tensor`)."""
from __future__ import annotations

from ._prefixed import resolver

__getattr__, __dir__ = resolver("image", ("_image_",), globals())
