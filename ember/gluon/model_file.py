"""`Block.save(prefix)` / `Block.load(prefix)`: a model's structure and parameters (MXNet 1.9.1's format).

`<prefix>-model.json` holds one nested dictionary per block: its key is the block's class name
in lower case and its place in a depth-first walk (`mlp0`, `dense1`, ...), its value the block's
name (`orig_name`), its children's attribute names (`children`: child name -> attribute) and,
for a hybridized HybridBlock that has traced its graph, that graph (`symbol`, `inputs`,
`in_format`, `out_format`).  `<prefix>-model.params` is `save_parameters`'s file.

`load` does not build the model: it is called on a model built by the same code, in the same
order, and gives its blocks back their saved names (so their parameters' dictionary keys are the
saved ones), their children's saved attribute names and, for hybridized blocks, the saved graph,
then loads the parameters.  Files written by either MXNet or ember load in the other.
"""
from __future__ import annotations

import json
from typing import List, Tuple

from .. import symbol as sym_mod


def save(block, prefix: str) -> None:
    """Write `<prefix>-model.json` and `<prefix>-model.params` for `block` (see the module docstring)."""
    from .block import HybridBlock
    model: dict = {}
    index = [0]

    def visit(blk, structure: dict) -> None:
        entry = {"orig_name": blk.name}
        structure[type(blk).__name__.lower() + str(index[0])] = entry
        if isinstance(blk, HybridBlock):
            entry["hybridized"] = bool(blk._cached_graph)
            if blk._cached_graph:
                inputs, out = blk._cached_graph
                entry["in_format"] = blk._in_format
                entry["out_format"] = blk._out_format
                entry["inputs"] = [None if s is None else s.tojson() for s in inputs]
                entry["symbol"] = out.tojson()
        children = {}
        entry["children"] = children
        for attr, child in blk._children.items():
            index[0] += 1
            children[child.name] = attr
            visit(child, entry)

    visit(block, model)
    with open(prefix + "-model.json", "w") as fp:
        json.dump(model, fp)
    block.save_parameters(prefix + "-model.params")


def load(block, prefix: str) -> None:
    """Apply `<prefix>-model.json` to `block`, built as the saved model was, and load its parameters.

    Raises KeyError (as MXNet) naming the block the file has no entry for; the model is left
    unchanged then."""
    from .block import HybridBlock
    filename = prefix + "-model.json"
    with open(filename) as fp:
        model = json.load(fp)
    plan: List[Tuple[object, dict]] = []   # (block, its entry), depth-first
    index = [0]

    def match(blk, structure: dict) -> None:
        key = type(blk).__name__.lower() + str(index[0])
        if not isinstance(structure, dict) or key not in structure:
            raise KeyError(f"{filename} has no entry '{key}' for block '{blk.name}': the model was not built "
                           "as the saved one (Block.load needs the same blocks created in the same order)")
        entry = structure[key]
        plan.append((blk, entry))
        for child in blk._children.values():
            index[0] += 1
            match(child, entry)
        if len(entry.get("children", {})) != len(blk._children):
            raise KeyError(f"{filename}: block '{entry.get('orig_name')}' was saved with "
                           f"{len(entry.get('children', {}))} children, '{blk.name}' has {len(blk._children)}")

    match(block, model)
    graphs = {}
    for blk, entry in plan:   # parse every saved graph before anything changes
        if isinstance(blk, HybridBlock) and entry.get("hybridized"):
            inputs = [None if s is None else sym_mod.load_json(s) for s in entry["inputs"]]
            graphs[id(blk)] = (inputs, sym_mod.load_json(entry["symbol"]))
    for blk, entry in plan:
        blk._name = entry["orig_name"]
        if id(blk) in graphs:
            blk._clear_cached_op()
            blk._in_format, blk._out_format = _formats(entry["in_format"]), _formats(entry["out_format"])
            blk._cached_graph = graphs[id(blk)]
            blk._active = True
        params = blk.params._params
        for key in list(params):   # the dictionary keys follow the block's restored name
            param = params.pop(key)
            params[blk.name + "_" + key[len(blk.params.prefix):]] = param
    for blk, entry in reversed(plan):   # children's names are those of their restored blocks
        saved = entry["children"]
        children = list(blk._children.values())
        blk._children.clear()
        for child in children:
            blk._children[saved.get(child.name, child.name)] = child
    block.load_parameters(prefix + "-model.params")


def _formats(fmt):
    """A format as saved (JSON lists) in the form `_flatten` makes (lists, ints)."""
    return [_formats(f) for f in fmt] if isinstance(fmt, list) else int(fmt)
