"""`mx.image` (also `mx.img`): MXNet 1.9.1's image package.

* `image` - decoding (`imdecode`, `imread`), resizing, cropping, border padding, normalisation and
  rotation functions; the augmenter classes (`Augmenter`, `ResizeAug`, ..., `CreateAugmenter`) and
  the `ImageIter` data iterator over .rec files or image lists.
* `detection` (also `det`) - the object-detection augmenters (`Det*Aug`, `CreateDetAugmenter`) and
  `ImageDetIter`, whose labels carry bounding boxes.

Everything public in both submodules is re-exported here, as MXNet's package does.
"""
from . import image  # noqa: F401
from .image import *  # noqa: F401,F403
from . import detection  # noqa: F401
from . import detection as det  # noqa: F401
from .detection import *  # noqa: F401,F403
