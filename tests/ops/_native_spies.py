"""Test helper: route a module's calls of native kernel entry points through a spy that records
whether each call took its arrays, and optionally refuses them all (so numpy's code runs)."""
from ember.engine import native


def spy_native(monkeypatch, module, names, on: bool) -> list:
    """Patch `module.native.<name>` for each name; returns the list the spies append True/False to
    (the kernel took the arrays or not).  With on=False every call answers False, doing nothing."""
    taken = []
    for name in names:
        real = getattr(native, name)

        def spy(*args, _real=real):
            ok = _real(*args) if on else False
            taken.append(ok)
            return ok
        monkeypatch.setattr(module.native, name, spy)
    return taken
