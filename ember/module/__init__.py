"""`mx.mod`: Module, the symbolic training API."""
from .base_module import BaseModule, ModuleError  # noqa: F401
from .module import Module  # noqa: F401
