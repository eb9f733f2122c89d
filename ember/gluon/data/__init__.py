"""`mx.gluon.data`: datasets, samplers, the DataLoader and `vision` (image datasets and transforms)."""
from .dataset import *  # noqa: F401,F403
from .dataset import ArrayDataset, Dataset, RecordFileDataset, SimpleDataset  # noqa: F401
from .sampler import *  # noqa: F401,F403
from .sampler import (BatchSampler, FilterSampler, IntervalSampler, RandomSampler, Sampler,  # noqa: F401
                      SequentialSampler)
from .dataloader import *  # noqa: F401,F403
from .dataloader import DataLoader  # noqa: F401
from . import vision  # noqa: F401
