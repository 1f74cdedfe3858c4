"""YAML and JSON from files a user hands us, bounded before anything is built from them.

`yaml.safe_load` never runs code, but it expands aliases: a 620-byte "billion laughs" file (a few
anchors, each a list of aliases to the one before) becomes hundreds of millions of nodes, and a
catalog overlay of that kind cost every command seconds and gigabytes. Deep nesting makes the
parsers (and anything that walks the result) recurse past Python's limit. So the YAML event stream
is read first, with the C parser where there is one: the nodes the document would expand to
(aliases counted at the size of what they point to) and its nesting depth are counted, and a
document past either bound is refused before it is built. JSON has no aliases; its depth is
bounded the same way.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from advisor.data.errors import AdvisorError

try:  # the C parser when libyaml is there: the event pass costs little beside the load itself
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader

#: nodes a document may expand to (the whole shipped catalog is ~60,000)
MAX_NODES = 2_000_000
#: mappings and lists inside each other (the catalog's deepest is 4)
MAX_DEPTH = 64


def check_yaml(text: str, what: str) -> None:
    """`AdvisorError` if ``text`` would expand past `MAX_NODES` or nest past `MAX_DEPTH`."""
    anchors: dict[str, int] = {}
    stack: list[list[Any]] = []     # per open collection: [anchor, nodes so far]
    total = 0

    def add(n: int) -> None:
        nonlocal total
        if stack:
            stack[-1][1] += n
        else:
            total += n
        if total + sum(c for _, c in stack) > MAX_NODES:
            raise AdvisorError(f"{what}: expands to more than {MAX_NODES:,} values (aliases of aliases); "
                               "refused before loading")

    try:
        for ev in yaml.parse(text, Loader=_Loader):
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append([ev.anchor, 1])
                if len(stack) > MAX_DEPTH:
                    raise AdvisorError(f"{what}: nested more than {MAX_DEPTH} levels deep")
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, n = stack.pop()
                if anchor:
                    anchors[anchor] = n
                add(n)
            elif isinstance(ev, yaml.ScalarEvent):
                if ev.anchor:
                    anchors[ev.anchor] = 1
                add(1)
            elif isinstance(ev, yaml.AliasEvent):
                add(anchors.get(ev.anchor, 1))
    except yaml.YAMLError:
        return  # the load that follows reports it, with its line


def load_yaml(text: str, what: str) -> Any:
    """``text`` parsed after `check_yaml`; `yaml.YAMLError` as yaml raises it for a broken document."""
    check_yaml(text, what)
    return yaml.load(text, Loader=_Loader)


def check_depth(value: Any, what: str) -> Any:
    """``value`` if its lists and mappings nest at most `MAX_DEPTH` deep, else `AdvisorError`."""
    todo = [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (dict, list)):
            if d > MAX_DEPTH:
                raise AdvisorError(f"{what}: nested more than {MAX_DEPTH} levels deep")
            todo.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return value


def load_json(text: str | bytes, what: str) -> Any:
    """``text`` parsed as JSON, its depth bounded; `ValueError` (json's) for a broken document."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise AdvisorError(f"{what}: nested too deeply to read") from None
    return check_depth(value, what)
