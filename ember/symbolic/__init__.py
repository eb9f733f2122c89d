"""Symbolic graphs: Symbol, graph passes, the memory planner and executors (`mx.sym`, `bind`)."""
from __future__ import annotations

from .executor import Executor, simple_bind  # noqa: F401
from .export import to_networkx  # noqa: F401
from .json_io import load, load_json  # noqa: F401
from .naming import AttrScope, NameManager, Prefix  # noqa: F401
from .passes import PASSES, GraphState, compile_graph  # noqa: F401
from .symbol import Group, Symbol, Variable, var  # noqa: F401
