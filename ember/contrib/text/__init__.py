"""`mx.contrib.text`: MXNet 1.9.1's text helpers: token counting (`utils`), token indexing (`vocab`) and token
embeddings loaded from local files (`embedding`)."""
from . import utils  # noqa: F401
from . import vocab  # noqa: F401
from . import embedding  # noqa: F401
