"""Synthetic classes of answers: independently written programs, and a disguised copy of one."""

from __future__ import annotations

import random

_NAMES = ["x", "y", "grad", "out", "weight", "value", "total", "scale", "acc", "item", "tmp", "norm", "mask", "part"]
_OPS = ["+", "-", "*", "/", "**", "//", "%"]
_CALLS = ["torch.exp", "torch.log1p", "torch.sqrt", "torch.relu", "torch.sigmoid", "torch.tanh", "abs", "float"]


def _statement(rng: random.Random, names: list[str]) -> str:
    a, b, c = rng.sample(names, 3)
    kind = rng.randrange(8)
    if kind == 0:
        return f"{a} = {b} {rng.choice(_OPS)} {rng.randint(1, 99)}"
    if kind == 1:
        return f"{a} = {rng.choice(_CALLS)}({b}) {rng.choice(_OPS)} {c}"
    if kind == 2:
        return f"if {a} > {rng.randint(0, 9)}:\n        {b} = {c} {rng.choice(_OPS)} {a}"
    if kind == 3:
        return f"for {a} in range({rng.randint(2, 12)}):\n        {b} += {c} * {a}"
    if kind == 4:
        return f"{a}, {b} = {b}, {a} {rng.choice(_OPS)} {c}"
    if kind == 5:
        return f"{a} = [{b} {rng.choice(_OPS)} k for k in {c}]"
    if kind == 6:
        return f"{a} = {b}.sum(dim={rng.randint(0, 2)}, keepdim={rng.choice([True, False])})"
    return f"while {a} < {rng.randint(10, 99)}:\n        {a} = {a} {rng.choice(_OPS)} {b}"


def answer(rng: random.Random) -> str:
    """One student's answer: two or three functions of several random statements each."""
    functions = []
    for index in range(rng.randint(2, 3)):
        names = rng.sample(_NAMES, 6)
        body = "\n    ".join(_statement(rng, names) for _ in range(rng.randint(4, 7)))
        functions.append(f"def {rng.choice(['step', 'part', 'helper', 'apply'])}_{index}({names[0]}, {names[1]}):\n"
                         f"    {body}\n    return {names[2]}")
    return "\n\n\n".join(functions)


def disguised_copy(source: str, rng: random.Random) -> str:
    """``source`` renamed, reformatted, commented and with its functions in another order."""
    renames = {name: f"my_{name}_{rng.randint(0, 9)}" for name in _NAMES}
    functions = source.split("\n\n\n")
    rng.shuffle(functions)
    if len(functions) > 1 and functions == source.split("\n\n\n"):
        functions.reverse()
    out = []
    for function in functions:
        lines = []
        for line in function.splitlines():
            words = [renames.get(word, word) for word in line.replace("(", " ( ").replace(")", " ) ").split(" ")]
            indent = len(line) - len(line.lstrip())
            lines.append(" " * (indent * 2) + " ".join(word for word in words if word).replace(" ( ", "(")
                         .replace(" ) ", ")").replace(" ,", ","))
            if rng.random() < 0.3:
                lines.append(" " * (indent * 2) + "# step done")
        out.append("\n".join(lines))
    return "\n\n".join(out)
