"""Runs inside the student's kernel: a snapshot of what the tests rely on, and checks against it.

The grader's agent (:mod:`hooklab.grading.kernels.agent`, the kernel's class) loads this file by
path (not through the import system, which a submission could have changed) as module
``_hooklab_probe``, in the kernel server before it forks; before the notebook's first cell it calls
:func:`snapshot`, and before and after each test cell :func:`check`, outside the cell's code, as the
grading protocol's fields of the request ask. Both return JSON text, which the agent sends on the
observation channel. The grader keeps the first digest outside the kernel, so a submission that
rewrites this module's state is caught by the digest changing, not by the list of changes.

Watched: the modules the tests use (``sys.modules`` entries, their attributes), the classes
whose methods compare and read tensors, the builtins, the checkers' code and defaults, the
import system's hooks, tracing, and IPython's transformers, events and run methods. A module
loaded from the submission's folder is reported too.
"""

from __future__ import annotations

import array
import builtins
import hashlib
import json
import os
import sys
import threading
import types
from itertools import chain, repeat
from operator import attrgetter, is_, itemgetter
from typing import Any

MODULES = (
    "builtins", "math", "operator", "functools", "importlib", "json",
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.modules.module",
    "torch.autograd", "torch.autograd.function", "torch.autograd.gradcheck", "torch.testing",
    "numpy", "hooklab", "hooklab.checks", "hooklab.observations", "hooklab.hints", "hooklab.grading.kernels.agent",
)
# hooklab's modules that gain no names as they run: one added (a global that shadows a builtin) is a change
OWN = {"hooklab.checks", "hooklab.observations", "hooklab.hints", "hooklab.grading.kernels.agent"}

# Attributes that legitimately change while a notebook runs.
VOLATILE = {"builtins": {"_", "__", "___", "exit", "quit", "get_ipython", "display", "__IPYTHON__"}}
# Caches Python itself writes into a class or module: pickling an instance (torch.save) stores copyreg's
# __slotnames__, a warning attributed to a module's code its __warningregistry__.
CLASS_CACHES = {"__slotnames__", "__warningregistry__"}
# Callbacks these libraries register on IPython's events (matplotlib draws after each cell).
LIBRARY_PREFIXES = ("IPython.", "ipykernel.", "matplotlib.", "matplotlib_inline.", "ipywidgets.", "comm.", "traitlets.")
SHELL_METHODS = (
    "run_cell", "run_cell_async", "_run_cell", "run_code", "run_ast_nodes", "transform_cell",
    "transform_ast", "showtraceback", "_showtraceback", "showsyntaxerror", "user_expressions",
    "ex", "ev", "safe_execfile",
)
KERNEL_METHODS = ("do_execute", "execute_request", "dispatch_shell", "send_response")

_state: dict[str, Any] = {}
_realpaths: dict[str, str] = {}
_origins: dict[str, tuple[Any, Any, bool]] = {}  # module name → (module, its __file__, loaded from the folder)
_scan: dict[str, Any] = {}  # the last look at sys.modules: its names, modules and files (held), what was found
_MISSING = object()
_seen_changed: set[str] = set()  # what watched_as_snapshot found changed as an observation was sent
_FUNCTION_PARTS = attrgetter("__code__", "__defaults__", "__kwdefaults__")  # what a function can have replaced


def _classes() -> list[type]:
    """The classes watched attribute by attribute, as they were at the first call (the snapshot's): a module
    swapped in sys.modules later does not change which classes are watched."""
    if "classes" not in _state:
        import contextlib

        import numpy
        import torch
        from IPython.core.compilerop import CachingCompiler
        from IPython.core.inputtransformer2 import TransformerManager
        from torch.autograd.gradcheck import GradcheckError

        import hooklab.checks  # noqa: F401 (loaded: its classes are watched below)

        # hooklab's own classes (the errors a test cell fails with, the checkers that are classes, the watches of
        # check_backward and check_no_model_run): a submission that reaches one through a checker's globals and sets
        # one of its attributes changes what the checks see
        own = [value for name in sorted(OWN) for value in vars(sys.modules[name]).values()
               if name in sys.modules and isinstance(value, type) and value.__module__ == name]
        # the context managers and the modes' base classes the checkers' watches enter and leave: their __exit__
        # runs between an answer's method returning and the checker reading what it returned
        watches = [contextlib._GeneratorContextManager, contextlib.nullcontext, torch.overrides.TorchFunctionMode,
                   torch.utils._python_dispatch.TorchDispatchMode]
        _state["classes"] = [torch.Tensor, torch._C.TensorBase, torch.nn.Module, torch.nn.Parameter,
                             torch.autograd.Function,
                             torch.Generator, torch.Size, numpy.ndarray, CachingCompiler, TransformerManager,
                             *own, GradcheckError, *watches]
    return _state["classes"]


def _token(value: Any) -> str:
    _state.setdefault("objects", {})[id(value)] = value  # held, so no other object can reuse the id
    return f"{type(value).__qualname__}@{id(value):x}"


def _ids(values: Any) -> array.array:
    return array.array("Q", list(map(id, values)))


def _namespaces() -> dict[str, tuple[Any, bool]]:
    """The namespaces watched attribute by attribute: label prefix → (its mapping, whether an attribute
    added to it is a change). A module's are not (torch and numpy add some lazily), but for :data:`OWN`; a
    class's are."""
    spaces: dict[str, tuple[Any, bool]] = {}
    for name in MODULES:
        module = sys.modules.get(name)
        spaces[name] = (vars(module) if module is not None else {}, name in OWN)
    for cls in _classes():
        spaces[f"{cls.__module__}.{cls.__qualname__}"] = (vars(cls), True)
    return spaces


def _watch() -> dict[str, tuple[list[str], list[Any], array.array, list[int], list[tuple], array.array]]:
    """The snapshot of every watched namespace: prefix → (its names, their values, the values' ids, the
    positions of its Python functions, their code and defaults, the ids of those); a module's volatile
    names and submodules left out, and the caches Python writes into a class."""
    watched = {}
    for prefix, (mapping, additions) in _namespaces().items():
        skip = CLASS_CACHES if additions else VOLATILE.get(prefix, set())
        items = [(key, value) for key, value in list(mapping.items()) if key not in skip
                 and (additions or not isinstance(value, types.ModuleType))]
        values = [value for _, value in items]
        functions = [index for index, value in enumerate(values) if type(value) is types.FunctionType]
        parts = _parts(values, functions)
        watched[prefix] = ([key for key, _ in items], values, _ids(values), functions, parts,
                           _ids(chain.from_iterable(parts)))
    return watched


def _parts(values: list[Any], functions: list[int]) -> list[tuple]:
    """The code and defaults of the functions at these positions (each replaceable on its own)."""
    return list(map(_FUNCTION_PARTS, map(values.__getitem__, functions)))


def _facts(shell: Any) -> dict[str, str]:
    """What is watched besides the namespaces' attributes, as text: label → token or value."""
    facts: dict[str, str] = {}
    for name in (*MODULES, __name__):  # this probe too: the grader finds it under its name in sys.modules
        module = sys.modules.get(name)
        facts[f"sys.modules[{name!r}]"] = _token(module)
        if module is not None:
            facts[f"{name} (file)"] = str(getattr(module, "__file__", None))
    checks = sys.modules.get("hooklab.checks")
    for key, value in list(vars(checks).items()) if checks else []:
        if isinstance(value, types.FunctionType):
            facts[f"hooklab.checks.{key} (code)"] = _token(value.__code__)
            facts[f"hooklab.checks.{key} (defaults)"] = repr((value.__defaults__, value.__kwdefaults__))
            facts[f"hooklab.checks.{key} (globals)"] = _token(value.__globals__)
    facts["hooklab.observations channel"] = _channel(sys.modules.get("hooklab.observations"))
    facts["sys.meta_path"] = repr([_token(finder) for finder in sys.meta_path])
    facts["sys.path_hooks"] = repr([_token(hook) for hook in sys.path_hooks])
    facts["sys.settrace"] = _token(sys.gettrace())
    facts["sys.setprofile"] = _token(sys.getprofile())
    facts["threading.settrace"] = _token(threading.gettrace())
    facts["threading.setprofile"] = _token(threading.getprofile())
    facts["sys.excepthook"] = _token(sys.excepthook)
    facts["sys.modules (object)"] = _token(sys.modules)
    facts["builtins.__import__"] = _token(builtins.__import__)
    facts.update(_modes())
    facts.update(_reading_methods())
    if shell is not None:
        facts.update(_shell_facts(shell))
    return facts


def _modes() -> dict[str, str]:
    """How many torch function modes and dispatch modes are entered, and whether torch's Python dispatcher is on: none
    and off between cells, where an answer enters and leaves its modes inside its own functions (notebook 09); one left
    entered changes what the tests compute. Read
    from torch here, not through hooklab.observations' own test of the stacks: the probe imports nothing it watches."""
    torch_c = getattr(sys.modules.get("torch"), "_C", None)
    counts = {}
    for label, name in (("torch function modes entered", "_len_torch_function_stack"),
                        ("torch dispatch modes entered", "_len_torch_dispatch_stack")):
        length = getattr(torch_c, name, None)
        counts[label] = str(length()) if callable(length) else "unknown"
    included = getattr(torch_c, "_dispatch_tls_is_dispatch_key_included", None)
    key = getattr(getattr(torch_c, "DispatchKey", None), "PythonDispatcher", None)
    # on, it runs the Python kernels OpOverload.py_impl gave torch's operators, the tests' own computations included
    counts["torch's Python dispatcher"] = ("unknown" if not callable(included) or key is None
                                           else "on" if included(key) else "off")
    return counts


def _reading_methods() -> dict[str, str]:
    """A model's reading methods (``named_parameters``, ...: the scan's ``MODULE_READS``) on torch's own module
    classes: one set on ``nn.Sequential`` by a name the scan cannot read would show the tests parts a model does not
    have (on ``nn.Module`` itself, and on a model object, the agent's guard and the watched classes see it). The
    classes are those ``torch.nn`` holds at the snapshot."""
    if "module_classes" not in _state:
        import torch

        from hooklab.grading.integrity.rules import MODULE_READS

        classes = {value for value in vars(torch.nn).values()
                   if isinstance(value, type) and issubclass(value, torch.nn.Module)}
        _state["module_classes"] = (sorted(classes, key=attrgetter("__qualname__")), sorted(MODULE_READS))
    classes, reads = _state["module_classes"]
    facts = {}
    for cls in classes:
        own = vars(cls)
        facts[f"torch.nn.{cls.__qualname__} (reading methods)"] = repr([(name, _token(own[name])) for name in reads
                                                                        if name in own])
    return facts


def _channel(observations: Any) -> str:
    """What the checkers send their observations with (hooklab.observations): the function, and the file its
    descriptor is."""
    state = getattr(observations, "_state", None)
    send = dict.get(state, "send") if type(state) is dict else None
    fd = dict.get(state, "channel") if type(state) is dict else None
    if type(fd) is not int:
        return f"{_token(send)} {_token(fd)}"
    try:
        return f"{_token(send)} {os.fstat(fd).st_ino}"
    except OSError:
        return f"{_token(send)} closed"


def _shell_facts(shell: Any) -> dict[str, str]:
    facts = {
        "IPython input_transformers_cleanup": repr([_token(t) for t in shell.input_transformers_cleanup]),
        "IPython input_transformers_post": repr([_token(t) for t in shell.input_transformers_post]),
        "IPython ast_transformers": repr([_token(t) for t in shell.ast_transformers]),
        "IPython input_transformer_manager": _token(shell.input_transformer_manager),
        "IPython custom exception handler": repr((shell.custom_exceptions, _token(shell.CustomTB))),
        "IPython compiler": _token(shell.compile),
        "IPython InteractiveTB": _token(shell.InteractiveTB),
        "IPython displayhook": _token(shell.displayhook),
        "IPython display publisher": _token(shell.display_pub),
        "IPython shell class": _token(type(shell)),
    }
    manager = shell.input_transformer_manager
    for attribute in ("cleanup_transforms", "line_transforms", "token_transformers"):
        facts[f"IPython input_transformer_manager.{attribute}"] = repr([_token(t)
                                                                        for t in getattr(manager, attribute, [])])
    for event, callbacks in shell.events.callbacks.items():
        foreign = [_token(c) for c in callbacks if not _library_callable(c)]
        facts[f"IPython event {event}"] = repr(foreign)
    for name in SHELL_METHODS:
        facts[f"IPython shell.{name}"] = _token(getattr(type(shell), name, None))
        facts[f"IPython shell.{name} (instance)"] = str(name in vars(shell))
    kernel = getattr(shell, "kernel", None)
    if kernel is not None:
        for name in KERNEL_METHODS:
            facts[f"kernel.{name}"] = _token(getattr(type(kernel), name, None))
            facts[f"kernel.{name} (instance)"] = str(name in vars(kernel))
        facts["kernel shell_handlers"] = repr(sorted((k, _token(v)) for k, v in kernel.shell_handlers.items()))
    return facts


def _library_callable(callback: Any) -> bool:
    """A callback IPython, ipykernel or matplotlib registered (a plain function or method of theirs)."""
    function = getattr(callback, "__func__", callback)
    return isinstance(function, types.FunctionType) and (function.__module__ or "").startswith(LIBRARY_PREFIXES)


def _digest(facts: dict[str, str],
            kept: dict[str, tuple[list[str], list[Any], array.array, list[str], array.array]]) -> str:
    """One hash of the facts' text and, namespace by namespace, of the names watched in it, the identity
    (``ids``, given) and type of each value kept, the names added to it and the identity of its functions'
    code and defaults (``part_ids``, given)."""
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True).encode())
    for prefix, (keys, values, ids, added, part_ids) in kept.items():
        digest.update(f"\0{prefix}\0{chr(10).join(keys)}\0{chr(10).join(added)}\0".encode())
        digest.update(ids.tobytes())
        digest.update(_ids(map(type, values)).tobytes())
        digest.update(part_ids.tobytes())
    return digest.hexdigest()


def _own_wrapper(new: Any, old: Any) -> bool:
    """Whether ``new`` is the library's own wrapper of ``old`` (torch wraps ``torch.manual_seed``
    when torch._dynamo loads): a function defined in the library's files whose ``__wrapped__`` is ``old``."""
    code = getattr(new, "__code__", None)
    package = sys.modules.get((getattr(old, "__module__", None) or "").split(".")[0])
    library = os.path.dirname(getattr(package, "__file__", "") or "")
    return (
        isinstance(new, types.FunctionType)
        and getattr(new, "__wrapped__", None) is old
        and bool(library)
        and code is not None
        and os.path.realpath(code.co_filename).startswith(os.path.join(os.path.realpath(library), ""))
    )


def _submission_modules(folder: str) -> list[str]:
    """Modules loaded from the submission's folder (a file that shadows or adds a module); a module is
    looked at when it appears under its name in ``sys.modules`` and when its file changes (a reload)."""
    items = list(sys.modules.items())
    names, modules = list(map(itemgetter(0), items)), list(map(itemgetter(1), items))
    files = list(map(getattr, modules, repeat("__file__"), repeat(None)))
    looked = (names, _ids(modules), _ids(files))
    if _scan.get("looked") == looked:  # the same modules with the same files (held: their ids stay theirs)
        return _scan["found"]
    found = []
    prefix = os.path.join(folder, "")
    for name, module, origin in zip(names, modules, files):
        seen = _origins.get(name)
        if seen is None or seen[0] is not module or seen[1] is not origin:  # new, replaced or reloaded: look again
            inside = _is_path(origin) and _resolved(origin).startswith(prefix)
            _origins[name] = seen = (module, origin, inside)
        if seen[2]:
            found.append(name)
    _scan.update(looked=looked, held=(modules, files), found=sorted(found))
    return _scan["found"]


def _is_path(origin: Any) -> bool:
    """Whether a module's ``__file__`` names a file (not None, nor a relative or made-up name)."""
    return isinstance(origin, str) and os.path.isabs(origin)


def _resolved(path: str) -> str:
    """``path`` with its links resolved, once per path (thousands of modules)."""
    if path not in _realpaths:
        _realpaths[path] = os.path.realpath(path)
    return _realpaths[path]


def prepare() -> None:
    """Resolve the files of the modules loaded so far: a kernel server calls this before it forks, so
    each kernel's first check does not resolve thousands of paths."""
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if _is_path(origin):
            _resolved(origin)


def snapshot(expected_files: dict[str, str]) -> str:
    """Import what the tests use, check each comes from the grading environment, remember it all."""
    import importlib

    from IPython import get_ipython

    problems = []
    for name, expected in expected_files.items():
        module = importlib.import_module(name)
        origin = os.path.realpath(getattr(module, "__file__", "") or "")
        if origin != os.path.realpath(expected):
            problems.append(f"{name} is loaded from {origin}, not from the grading environment")
    shell = get_ipython()
    facts, watched = _facts(shell), _watch()
    _state.update(shell=shell, facts=facts, watched=watched, folder=os.path.realpath(os.getcwd()))
    kept = {prefix: (keys, values, ids, [], part_ids)
            for prefix, (keys, values, ids, _, _, part_ids) in watched.items()}
    return json.dumps({"digest": _digest(facts, kept), "problems": problems})


def watched_as_snapshot() -> bool:
    """Whether every watched class, and hooklab's own modules (the checkers, their encoder and sender), hold under
    each name they had at the snapshot the object they held then (True before the snapshot): asked as each
    observation is sent, it sees a method or a checker's global swapped inside a cell and put back before the cell
    ends, which :func:`check`, between cells, does not. What it found changed is kept, and every later :func:`check`
    reports it (the notebook is held), even once it is put back."""
    watched = _state.get("classes_watched")
    if watched is None:
        if "watched" not in _state:
            return True
        classes = {f"{cls.__module__}.{cls.__qualname__}": vars(cls) for cls in _classes()}
        classes.update((name, vars(sys.modules[name])) for name in OWN if name in sys.modules)
        watched = _state["classes_watched"] = [(prefix, classes[prefix], keys, values, len(classes[prefix]))
                                               for prefix, (keys, values, *_) in _state["watched"].items()
                                               if prefix in classes]
    if all(all(map(is_, map(mapping.get, keys), values)) and (len(mapping) == size or not _added(mapping, keys))
           for _, mapping, keys, values, size in watched):
        return True
    _seen_changed.update(f"{prefix}.{key} (while a test ran)" for prefix, mapping, keys, values, _ in watched
                         for key, value in zip(keys, values) if mapping.get(key, _MISSING) is not value)
    _seen_changed.update(f"{prefix}.{key} (while a test ran)" for prefix, mapping, keys, _, _ in watched
                         for key in _added(mapping, keys))
    return False


def _added(mapping: Any, keys: list[str]) -> list[str]:
    """The names in ``mapping`` that are not ``keys`` (a name added to a class shadows what its bases hold, ``to`` on
    ``torch.Tensor``), but the caches Python writes into a class."""
    known = {*keys, *CLASS_CACHES}
    return [key for key in list(mapping) if key not in known]


def check(proof: str = "") -> str:
    """What changed since the snapshot, the current digest, and whether the proof name was set to True."""
    shell = _state["shell"]
    facts, before = _facts(shell), _state["facts"]
    changes = sorted(label for label in before.keys() | facts.keys() if before.get(label) != facts.get(label))
    spaces = _namespaces()
    kept = {}
    for prefix, (keys, values, ids, functions, parts, part_ids) in _state["watched"].items():
        mapping, additions = spaces.get(prefix, ({}, False))
        now = list(map(mapping.get, keys, repeat(_MISSING)))
        added = []
        if additions and list(mapping) != keys:  # a class's names, in order, unless one was added or removed
            known = {*keys, *CLASS_CACHES}
            added = [key for key in mapping if key not in known]
        changes += [f"{prefix}.{key}" for key in added]
        now_parts = _parts(values, functions)  # the snapshot's functions, wherever they are now
        now_part_ids = _ids(chain.from_iterable(now_parts))
        if now_part_ids != part_ids:
            changes += [f"{prefix}.{keys[index]} (code or defaults)"
                        for index, old, new in zip(functions, parts, now_parts)
                        if any(a is not b for a, b in zip(old, new))]
        now_ids = _ids(now)
        if now_ids == ids:  # the same object under every name
            kept[prefix] = (keys, now, now_ids, added, now_part_ids)
            continue
        held = []
        for key, old, new in zip(keys, values, now):
            if new is old or _own_wrapper(new, old):
                held.append(old)
            else:
                held.append(new)
                changes.append(f"{prefix}.{key}")
        kept[prefix] = (keys, held, _ids(held), added, now_part_ids)
    changes += [f"{name} loaded from the submission folder" for name in _submission_modules(_state["folder"])]
    changes += sorted(_seen_changed)
    ran = bool(proof) and shell.user_ns.pop(proof, None) is True
    return json.dumps({"digest": _digest(facts, kept), "changes": sorted(changes), "ran": ran})
