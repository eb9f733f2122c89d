"""Automatic node names (`mx.name.NameManager`, `mx.name.Prefix`) and attribute scopes (`mx.AttrScope`)."""
from __future__ import annotations

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

    def __init__(self, **attrs):
        for k, v in attrs.items():
            if not isinstance(v, str):
                raise TypeError(f"AttrScope: attribute '{k}' must be a string, got {type(v).__name__}")
        self._attr = attrs
        self._old: Optional["AttrScope"] = None

    def get(self, attrs: Optional[dict]) -> dict:
        out = dict(self._attr)
        out.update(attrs or {})
        return out

    def __enter__(self):
        self._old = AttrScope.current
        merged = dict(self._old._attr)
        merged.update(self._attr)
        self._attr = merged
        AttrScope._current.value = self
        return self

    def __exit__(self, *exc):
        AttrScope._current.value = self._old

    @staticmethod
    def _root() -> "AttrScope":
        return AttrScope()
