"""Automatic node names (`mx.name.NameManager`, `mx.name.Prefix`) and attribute scopes (`mx.AttrScope`)."""
from __future__ import annotations

import collections
import threading
from typing import Dict, Optional


class _ThreadCurrent(type):
    """`Cls.current`: this thread's scope, read and assigned on the class (MXNet's classproperty),
    a fresh root scope in a thread that has none yet."""

    @property
    def current(cls):
        cur = getattr(cls._current, "value", None)
        if cur is None:
            cur = cls._current.value = cls._root()
        return cur

    @current.setter
    def current(cls, value) -> None:
        cls._current.value = value


class NameManager(metaclass=_ThreadCurrent):
    """Gives unnamed nodes the name ``<hint><counter>`` (``fullyconnected0``), counting per hint."""

    _current = threading.local()

    def __init__(self):
        self._counter: Dict[str, int] = {}
        self._old: Optional["NameManager"] = None

    def get(self, name: Optional[str], hint: str) -> str:
        """`name` if given, else the next automatic name for `hint`."""
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self):
        self._old = NameManager.current
        NameManager._current.value = self
        return self

    def __exit__(self, *exc):
        NameManager._current.value = self._old

    @staticmethod
    def _root() -> "NameManager":
        return NameManager()


class Prefix(NameManager):
    """A NameManager that prepends `prefix` to every name, given or automatic."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def get(self, name: Optional[str], hint: str) -> str:
        return self._prefix + super().get(name, hint)


class AttrScope(metaclass=_ThreadCurrent):
    """`with mx.AttrScope(ctx_group='dev1'):` adds string attributes to every symbol made inside."""

    _current = threading.local()
    # how many graphs of each name control flow has traced (MXNet's counter: a graph's mark is the
    # name and its count so far, prefixed by the enclosing graph's mark)
    _subgraph_names: Dict[str, int] = collections.defaultdict(int)

    @classmethod
    def unique_subgraph_name(cls, name: str) -> str:
        """MXNet's `_get_unique_subgraph_name`: `name` made unique among the graphs traced so far."""
        outer = cls.current._attr.get("__subgraph_name__", "")
        if outer:
            name = f"{outer}${name}"
        cls._subgraph_names[name] += 1
        return f"{name}{cls._subgraph_names[name] - 1}"

    def __init__(self, **attrs):
        for k, v in attrs.items():
            if not isinstance(v, str):
                raise TypeError(f"AttrScope: attribute '{k}' must be a string, got {type(v).__name__}")
        self._attr = attrs
        self._old: Optional["AttrScope"] = None

    def get(self, attrs: Optional[dict]) -> dict:
        return {**self._attr, **(attrs or {})}

    def __enter__(self):
        self._old = AttrScope.current
        self._attr = {**self._old._attr, **self._attr}
        AttrScope._current.value = self
        return self

    def __exit__(self, *exc):
        AttrScope._current.value = self._old

    @staticmethod
    def _root() -> "AttrScope":
        return AttrScope()
