"""The static check of a student's code (hooklab.grading.integrity): every cheat of the catalogue
is named, and no honest answer, added scratch cell or code copied from the notebooks is."""

from __future__ import annotations

import copy
from functools import cache

import nbformat
import pytest
from nbgrader import utils

from catalogues.attacks import Attack, attacks
from catalogues.corpus import CAUGHT_BY_CHECKERS
from catalogues.honest_answers import Answer, extra_cells, honest_answers
from conftest import REPO, solution_notebooks
from hooklab.grading.integrity import preprocessor
from hooklab.grading.integrity.rules import allowed_for
from hooklab.grading.integrity.scan import definitions_of, imports_of, names_loaded, scan


@cache
def context(assignment: str) -> tuple[dict[str, str], set[str], set[str]]:
    """What the notebook's own cells import, the names its test cells read, what its given cells define."""
    nb = nbformat.read(next((REPO / "solutions" / assignment).glob("*.ipynb")), as_version=4)
    tests = [c.source for c in nb.cells if utils.is_grade(c)]
    given = [c.source for c in nb.cells if c.cell_type == "code" and not utils.is_solution(c) and not utils.is_grade(c)]
    return imports_of(given), names_loaded(tests), definitions_of(given)


def findings(assignment: str, *sources: str) -> list[str]:
    given, tests, defined = context(assignment)
    return [str(f)
            for f in scan(list(enumerate(sources, start=1)), given, tests, defined, allowed_for(assignment))]


@pytest.mark.parametrize("answer", honest_answers(), ids=lambda a: f"{a.assignment}/{a.grade_id}/{a.style}")
def test_honest_answers_are_not_flagged(answer: Answer):
    assert findings(answer.assignment, answer.source) == []


@pytest.mark.parametrize("extra", extra_cells(), ids=lambda e: f"{e[0]}/{e[1]}")
def test_scratch_cells_a_student_adds_are_not_flagged(extra: tuple[str, str, str]):
    assignment, _, source = extra
    assert findings(assignment, source) == []


@pytest.mark.parametrize("path", solution_notebooks(), ids=lambda p: p.parent.name)
def test_code_copied_from_the_notebooks_is_not_flagged(path):
    """Students copy demo cells into their answers: the pack's own code must pass."""
    nb = nbformat.read(path, as_version=4)
    sources = [c.source for c in nb.cells if c.cell_type == "code" and not utils.is_grade(c)]
    _, tests, _ = context(path.parent.name)
    found = scan(list(enumerate(sources, start=1)), {}, tests, (), allowed_for(path.parent.name))
    assert [str(f) for f in found] == []


@pytest.mark.parametrize("attack", [a for a in attacks() if not a.files and a.name not in CAUGHT_BY_CHECKERS],
                         ids=lambda a: a.name)
def test_every_cheat_in_student_code_is_named(attack: Attack):
    """(A cheat shipped as a file is caught at run time, one that only fools a checker's comparison
    by the checker itself: see the corpus.)"""
    found = findings(attack.assignment, *attack.answers.values())
    assert found, f"{attack.name} ({attack.category}) was not flagged"


@pytest.mark.parametrize(("source", "technique"), [
    ("torch.allclose = lambda *a, **k: True", "patches torch.allclose"),
    ("t = torch\nt.equal = lambda *a: True", "patches torch.equal"),
    ("from hooklab import checks\nsetattr(checks, 'check_tensor', print)", "patches hooklab.checks.check_tensor"),
    ("check_tensor.__kwdefaults__['atol'] = 1e9", "changes a function's default arguments"),
    ("import numpy as torch", "rebinds torch"),
    ("list = lambda *a: [None] * 3", "rebinds the builtin list"),
    ("class Add(nn.Module):\n    pass", "rebinds the notebook's Add"),
    ("%%time\nimport gc", "searches the interpreter's objects (gc)"),
    ("%run helper.py", "uses the IPython magic %run"),
    ("getattr(check_tensor, '__glo' + 'bals__')", "reaches '__glo' by name"),
    ("print(In[-1])", "reads IPython's input history"),
    ("import helper", "imports helper, which is not an installed module"),
    # a child no watch sees
    ("import os\nif os.fork() == 0:\n    pass", "runs code outside its cell (processes: os.fork)"),
    ("from os import posix_spawn", "runs code outside its cell (processes: os.posix_spawn)"),
    ("import subprocess", "runs code outside its cell (processes)"),
    ("import hooklab.observations as o\no._state['seen'] = []", "reaches the grader's observations"),
    ("import hooklab.checks as c\nc.observations._state['seen'] = []", "reaches the grader's observations"),
    ("from hooklab.checks import observations\nobservations._state['seen'].clear()",
     "reaches the grader's observations"),
    ("from hooklab import checks\nstate = checks.observations._state", "reaches the grader's observations"),
    ("import collections as _c\nobservations = _c._sys.modules['hooklab.observations']",
     "uses the interpreter's machinery (sys.modules)"),
    # a module reached through another that holds it is still itself
    ("import logging\nlogging.threading.Thread(target=print).start()", "runs code outside its cell (threads)"),
    ("import logging\nlogging.os.fork()", "runs code outside its cell (processes: os.fork)"),
    ("import torch.nn.functional as F\nF.torch._C.DisableTorchFunction()", "reaches torch's internals (torch._C)"),
    ("import torch.nn.functional as F\nF.torch.overrides._pop_mode_temporarily()",
     "intercepts torch functions (torch.overrides)"),
    ("torch.autograd.profiler._disable_profiler()",
     "reaches torch's internals (torch.autograd.profiler._disable_profiler)"),
    ("_C = getattr(torch, '_' + 'C')", "reaches an attribute of torch by a computed name"),
    ("setattr(Box, '_' + '_torch_function_' + '_', classmethod(print))", "reaches '__torch_function__' by name"),
    ("Box.__torch_function__ = classmethod(print)", "overrides torch functions for its tensors (__torch_function__)"),
    ("setattr(Box, '__torch_dispatch__', print)", "names '__torch_dispatch__'"),
    # an error that shows nothing: a test cell that failed would look as if it passed
    ("class Quiet(Exception):\n    def _render_traceback_(self):\n        return []",
     "changes how IPython shows an error (_render_traceback_)"),
    ("AnswerError._render_traceback_ = print", "changes how IPython shows an error (_render_traceback_)"),
    # an object passed through a display is still itself
    ("import sys\nbuiltins = [sys][0].modules['builtins']", "uses the interpreter's machinery (sys.modules)"),
    ("import sys\nbuiltins = {'s': sys}['s'].modules['builtins']", "uses the interpreter's machinery (sys.modules)"),
    ("class Looks16(torch.Tensor):\n    @property\n    def dtype(self):\n        return torch.float16",
     "a tensor subclass that redefines dtype"),
    ("class Detached(nn.Parameter):\n    requires_grad = False", "a tensor subclass that redefines requires_grad"),
    ("import operator\noperator.attrgetter('_C')(torch)", "reaches attributes by computed names (operator.attrgetter)"),
    ("import functools\nfunctools.reduce(getattr, ['_C'], torch)", "passes getattr as a value"),
    ("import sys\nout = getattr(sys, 'stdout')\nout.session.send = print", "patches sys.stdout.session.send"),
    ("import pydoc\npydoc.pipepager('x', 'sh')", "runs shell commands (pydoc's pagers)"),
    ("loader = torch.utils.data.DataLoader(range(3), num_workers=1)",
     "runs code outside its cell (a DataLoader's worker processes)"),
    ("torch.jit.fork(print)", "runs TorchScript (torch.jit)"),
    # PyTorch's own backward formulas, reached through its decompositions: 08's answers are to be written, not borrowed
    ("from torch._decomp import decompositions", "reaches torch's internals (torch._decomp)"),
    ("torch._refs.nn.functional.softmax(x, 0)", "reaches torch's internals (torch._refs)"),
    # importlib: import_module with a constant name is an import like any other; every other use is the import system
    ("import importlib\nimportlib.import_module('ctypes')", "reaches memory directly (ctypes)"),
    ("import importlib\nimportlib.reload(torch)", "uses the import system (importlib)"),
    ("import importlib\nname = 'os'\nimportlib.import_module(name)", "uses the import system (importlib)"),
    ("import importlib\nprint(importlib)", "uses the import system (importlib)"),
    ("from importlib import import_module as load\nload('helper')", "imports helper, which is not an installed module"),
    ("import importlib.util", "uses the import system (importlib)"),
    # hooklab's modules handed around, where the scan would lose what they are (attack round 7), and their internals
    ("import hooklab.checks as _hc\n_m = (lambda m: m)(_hc)\n_m.observations._state.clear()",
     "hands hooklab's module hooklab.checks around"),
    ("import hooklab.checks as _hc\nobservations = [_hc][0].observations", "reaches the grader's observations"),
    ("import hooklab.checks as _hc\nchecker = [_hc][0]", "hands hooklab's module hooklab.checks around"),
    ("import hooklab\nkeep(hooklab.checks)", "hands hooklab's module hooklab.checks around"),
    ("import hooklab.checks\nhooklab.checks._autograd_grad = print",
     "reaches hooklab's internals (hooklab.checks._autograd_grad)"),
    ("import inspect\ninspect.getmodule(check_tensor).observations", "reads objects' internals (inspect.getmodule)"),
    ("import inspect\nnames = inspect.getclosurevars(check_tensor).globals",
     "reads objects' internals (inspect.getclosurevars)"),
    ("import pkgutil\npkgutil.resolve_name('hooklab.observations')", "uses the import system (pkgutil)"),
    # the kernel's end of its observation channel, and the descriptors it could be swapped through
    ("import socket\nsocket.socket(fileno=5).sendall(b'{}')", "reaches the kernel's connections (socket)"),
    ("import os\nos.dup2(os.open('/dev/null', os.O_WRONLY), 5)", "handles file descriptors (os.dup2)"),
    # code in a string, as whatever runs it would
    ("import timeit\ntimeit.timeit('import gc; gc.get_objects()', number=1)",
     "code in a string: searches the interpreter's objects (gc)"),
    ("def f(x: \"__import__('hooklab.observations')\"):\n    pass",
     "code in a string: uses the import system (__import__)"),
    ("import doctest", "runs code from strings (doctest)"),
    ("import cProfile\ncProfile.run('print(1)')", "runs code from a string (cProfile.run)"),
    ("from typing import get_type_hints\nget_type_hints(f)",
     "runs code from strings (annotations evaluated by typing.get_type_hints)"),
    # a module passed through a call, a container or a lambda: past it, what is done with it cannot be followed
    ("import sys\nmodules = next(iter([sys])).modules", "hands the module sys around"),
    ("t = min([torch], key=id)\nt.testing.assert_close = print", "hands the module torch around"),
    ("t = dict(a=torch.testing)['a']", "hands the module torch.testing around"),
    ("t = (lambda m: m)(torch.nn.functional.torch)", "hands the module torch.nn.functional.torch around"),
    ("import torch.nn.functional as F\nt = [F].pop().torch", "hands the module torch.nn.functional around"),
    ("probe = '_hooklab_probe'", "names the grader's module '_hooklab_probe'"),
    ("getattr(torch, 'testing').assert_close = print", "patches torch.testing.assert_close"),
    ("import warnings\ngetattr(warnings, 'sys').modules['torch'].allclose = print", "sys.modules"),
    ("x: exec('torch.equal = print') = 1", "runs code from a string (exec)"),
    ("def f() -> setattr(torch, 'equal', print):\n    pass", "patches torch.equal"),
    ("locals()['check_tensor'] = print", "reaches the notebook's namespace (locals())"),
    ("try:\n    1 / 0\nexcept ZeroDivisionError as check_equal:\n    pass", "rebinds check_equal"),
    ("match print:\n    case check_tensor:\n        pass", "rebinds check_tensor"),
    ("class A:\n    lib = torch\nA.lib.testing.assert_close = print", "hands the module torch around"),
    ("from importlib import import_module\nfor s in [import_module('sys')]:\n    s.modules.clear()",
     "hands the module sys around"),
    ("import timeit\ntimeit.timeit(bytes([49]).decode(), number=1)", "runs code from a string (timeit"),
    ("import typing\ntyping.ForwardRef('x')._evaluate({}, {}, frozenset())", "(typing.ForwardRef)"),
    ("import dataclasses\ndataclasses._create_fn('f', (), ['pass'], globals={})", "reaches a module's internals"),
    ("torch.hub.load('.', 'model', source='local')", "loads code from a folder or a repository (torch.hub)"),
    ("import sys\nm = {'k': 1, 'k': sys}['k']\nm.modules['x'] = 1", "hands the module sys around"),
    ("m = {1: 0, True: torch}[1]\nm.tanh = print", "hands the module torch around"),
    ("def id(m):\n    return m\n\nid(torch).exp = print", "hands the module torch around"),
    ("def f(print=lambda m: m):\n    print(torch).exp = print", "hands the module torch around"),
    ("class C:\n    import torch as t\n\nC.t.sigmoid = print", "imports inside a class body"),
    ("def f():\n    pass\n\ngetattr(f, '_' * 2 + 'globals' + '_' * 2)['check_tensor'] = print",
     "reaches 'globals' by name"),
    ("m = next(iter([nn.modules.activation.F]))\nm.relu = print", "hands the module torch.nn.modules.activation.F"),
    ("name = 'hooklab.grading.kernels.working_copy'", "names the grader's module"),
    # the protocol's nonce read from the stack's locals, and lines written on the channel's descriptor (attack round 16)
    ("import traceback\nfor f in traceback.StackSummary.extract(traceback.walk_stack(None)):\n    pass",
     "walks the call stack (traceback)"),
    ("from traceback import walk_stack\nframes = list(walk_stack(None))", "walks the call stack (traceback)"),
    ("import traceback\ntext = traceback.format_stack()", "walks the call stack (traceback)"),
    ("import traceback\ne = traceback.TracebackException(ValueError, ValueError(), None, capture_locals=True)",
     "reads the locals of the call stack (capture_locals)"),
    ("with open(fd, 'w', closefd=False) as channel:\n    channel.write('x')",
     "writes or reads a file descriptor (closefd)"),
    ("channel = open(7, 'w')", "opens a file descriptor by its number (open)"),
    ("channel = open(3 + 4, 'w')", "opens a file descriptor by its number (open)"),
    ("import io\nchannel = io.FileIO(int('7'), 'w')", "opens a file descriptor by its number (io.FileIO)"),
    ("import os\nfds = os.listdir('/proc/self/fd')", "reads the process's own files ('/proc/self/fd')"),
    ("sockets = open('/proc/net/unix').read()", "reads the process's own files ('/proc/net/unix')"),
    ("def f():\n    pass\n\nf.__closure__[0].cell_contents = None", "reads a function's closure"),
    ("def f(cell):\n    cell.cell_contents = None", "reads or changes a closure's variables (cell_contents)"),
    ("import os\nfds = os.listdir('/proc/' + str(os.getpid()) + '/fd')", "reads the process's own files ('/proc/')"),
])
def test_techniques_are_named_in_the_students_terms(source: str, technique: str):
    assert any(technique in f for f in findings("02_forward_hooks", source)), findings("02_forward_hooks", source)


def test_a_students_own_objects_may_be_changed_freely():
    own = (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        setattr(self, 'w' + '1', nn.Parameter(torch.ones(1)))\n"
        "net = Net()\nnet.extra_repr = lambda: 'custom'\nfor name, p in net.named_parameters():\n"
        "    setattr(net, name, nn.Parameter(p.detach() * 2))\nlayer = getattr(net, 'w1')\ninput = torch.ones(1)\n"
    )
    assert findings("02_forward_hooks", own) == []


@pytest.mark.parametrize(("assignment", "source"), [
    # only 02's test imports copy, for itself
    ("02_forward_hooks", "from copy import copy\n\nsnapshot = copy([1, 2])\n"),
    ("03_backward_hooks", "from copy import copy\n"),
    ("02_forward_hooks", "import sys\n\nsys.setrecursionlimit(10_000)  # a deep graph walk\n"),
    ("03_backward_hooks", "import importlib\n\nmath = importlib.import_module('math')\nlimit = math.inf\n"),
    ("03_backward_hooks", "from importlib import import_module\n\nnp = import_module('numpy')\n"),
    ("02_forward_hooks",
     "from hooklab.checks import check_tensor\nimport hooklab.checks\n\nhooklab.checks.check_equal(1, 1, 'one')\n"),
    ("02_forward_hooks", "import inspect\n\nprint(inspect.signature(torch.nn.Module.register_forward_hook))\n"),
    ("02_forward_hooks",
     "print('%d hooks: call model.eval() first, then x.grad.zero_()' % 2)\nlabel = f'{2}.weight'\n"),
    # what a module holds, as a value; a module named to getattr or hasattr, as the notebooks do
    ("02_forward_hooks", "from torch.autograd import gradcheck\n\nchecks = [gradcheck, torch.tanh, torch.nn.ReLU]\n"),
    ("02_forward_hooks", "F = torch.nn.functional  # an alias, followed by name\n\nout = F.relu(torch.ones(2))\n"),
    ("02_forward_hooks",
     "import numpy as np\n\nprint(torch, np, torch.nn.functional is F)\nhelp(F)\nprint(dir(nn)[:3])\n"),
    ("02_forward_hooks", "import timeit\n\nstart = timeit.default_timer()\n"),
    # ending or crashing the kernel is graded as a kernel that stopped (the corpus's exits and late_crash)
    ("02_forward_hooks", "import faulthandler\nimport os\n\nos._exit(0)\nfaulthandler._sigsegv()\n"),
    ("06_applications", "print(hasattr(torch.optim, 'OptimizerHook'), getattr(torch.nn, 'Linear')(2, 3))\n"),
    # the twins of the stack and descriptor rules: an error shown, files opened by name, a buffer
    ("02_forward_hooks", "import traceback\n\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()\n"
                         "    text = traceback.format_exc()\n"),
    ("02_forward_hooks", "path = 'log.txt'\nwith open(path, 'w') as log:\n    log.write('x')\n"
                         "with open('log.txt') as log, open(f'{path}.bak', 'w') as copy:\n"
                         "    copy.write(log.read())\n"),
    ("02_forward_hooks", "import io\n\nbuffer = io.BytesIO()\ntorch.save(torch.ones(2), buffer)\n"),
    ("02_forward_hooks", "with open('/proc/self/comm', 'w') as name:\n    name.write('busy')\n"),
])
def test_honest_lines_the_scan_once_held_are_not_flagged(assignment: str, source: str):
    assert findings(assignment, source) == []


# Honest code the scan once held, each beside a hostile twin that stays held: the rule was narrowed to what can change
# what the checkers observe (rules.METHODCALLER, ATTRGETTER, REDUCE, CALLED_BY_NAME, CONTAINERS, TORCH_PRIVATE_NAMES,
# MODES, ANNOTATION_TYPES; Checker.snapshot, visit_annotation).
@pytest.mark.parametrize(("assignment", "honest", "hostile", "technique"), [
    # operator.methodcaller(name, ...)(obj) is obj.name(...): its name is read as an attribute's, and it is called
    ("04_apply", "import operator\n\nfill = operator.methodcaller('fill_', 1.0)\nfill(torch.ones(2))\n",
     "import operator\nfrom hooklab import checks\n\n"
     "operator.methodcaller('__setattr__', 'check_tensor', print)(checks)\n",
     "reaches '__setattr__' by name"),
    ("04_apply", "from operator import methodcaller as call\n\nsizes = list(map(call('numel'), [torch.ones(2)]))\n",
     "from operator import methodcaller\n\nnames = ['numel']\ncallers = list(map(methodcaller, names))\n",
     "passes operator.methodcaller as a value"),
    ("04_apply", "from operator import methodcaller\n\nkind = 'zero'\nmethodcaller(kind + '_')(torch.ones(2))\n",
     "from operator import methodcaller\n\nn = bytes([95, 95]).decode()\nmethodcaller(n + 'subclasses' + n)(object)\n",
     "a hidden attribute"),
    ("04_apply", "from operator import methodcaller\n\nclear = methodcaller('clear')\n",
     "from operator import methodcaller\n\nspec = ['clear']\nmethodcaller(*spec)([])\n", "names it is not given"),
    ("04_apply", "import operator\n\nrows = [t.tolist() for t in map(operator.methodcaller('abs'), [torch.ones(1)])]\n",
     "import operator\n\noperator.methodcaller('fill_', 0)(torch)\n", "hands the module torch around"),
    # getattr(nn.init, <computed>): called at once, or a name ending in a written "_", gives one of its functions
    ("04_apply", "kind = 'xavier_uniform'\ngetattr(nn.init, f'{kind}_')(torch.empty(3, 3))\n",
     "name = 'torch'\ngetattr(nn.init, name)._C\n", "reaches an attribute of torch.nn.init by a computed name"),
    ("04_apply", "from torch.nn import init\n\nkind = 'zeros'\nfill = getattr(init, kind + '_')\n"
     "fill(torch.empty(2))\n",
     "from torch.nn import init\n\nkind = 'torch'\nfill = getattr(init, kind)\n",
     "reaches an attribute of torch.nn.init by a computed name"),
    ("04_apply", "kind = 'ones'\nfill = getattr(nn.init, f'{kind}_')\nweight = fill(torch.empty(2, 2))\nprint(fill)\n",
     "kind = 'ones'\nfill = getattr(nn.init, f'{kind}_')\nfirst = getattr(fill, sorted(dir(fill))[0])\n",
     "reaches an attribute of torch.nn.init.<computed> by a computed name"),
    ("05_autograd_function", "kind = 'uniform'\nassert hasattr(nn.init, '%s_' % kind) and hasattr(torch, kind)\n",
     "kind = 'zeros'\ngetattr(torch, '{}_'.format(kind))(2)\n", "reaches an attribute of torch by a computed name"),
    # locals() and vars() in a function: a snapshot of its own variables; at notebook level or in a class body, a
    # namespace of its own that writing to changes
    ("01_module_basics", "class Net(nn.Module):\n    def __init__(self, width: int):\n        super().__init__()\n"
     "        self.config = {k: v for k, v in locals().items() if k not in ('self', '__class__')}\n",
     "locals()['check_equal'] = print\n", "reaches the notebook's namespace (locals())"),
    ("01_module_basics", "def describe(factor, learnable):\n    return 'factor={factor}, learnable={learnable}'.format("
     "**vars())\n\n\nshow = lambda **options: sorted(locals())\n",
     "class Config:\n    locals()['width'] = 3\n    vars()['depth'] = 2\n", "reaches a module's namespace (vars())"),
    ("01_module_basics", "def hyper_parameters(lr, momentum):\n    kept = dict(locals())\n    return kept\n",
     "vars()['check_equal'] = print\n", "reaches a module's namespace (vars())"),
    ("01_module_basics", "def hyper_parameters(lr, momentum):\n    return sorted(vars().items())\n",
     "locals = globals\n\n\ndef patch():\n    locals()['check_equal'] = print\n",
     "reaches the notebook's namespace (locals())"),
    # a model's reading method's name on another object, or set to a plain container (calling it fails): not a model's
    # parts shown in its place
    ("02_forward_hooks", "class Recorder:\n    def __init__(self):\n        self.modules = []\n"
     "        self.buffers, self.state_dict = [], {}\n        self.children: list[str] = []\n",
     "def hide(model):\n    model.named_parameters = lambda *args, **kwargs: iter([])\n",
     "replaces named_parameters on an object"),
    ("02_forward_hooks", "from collections import OrderedDict\nfrom types import SimpleNamespace\n\n"
     "tracker = SimpleNamespace(modules=[])\ntracker.modules = list(nn.Linear(2, 2).modules())\n"
     "tracker.modules += [nn.ReLU()]\ntracker.parameters = OrderedDict()\nsetattr(tracker, 'buffers', ())\n"
     "tracker.named_modules = sorted(['b', 'a']) if tracker.modules else None\n",
     "def hide(model, shown):\n    model.modules = shown\n", "replaces modules on an object"),
    ("02_forward_hooks", "def reset(tracker):\n    tracker.modules = {name: None for name in ('a', 'b')}\n",
     "class Shown(list):\n    def __call__(self):\n        return iter(self)\n\n\n"
     "def hide(model):\n    model.modules = Shown()\n", "replaces modules on an object"),
    ("02_forward_hooks", "def reset(tracker):\n    tracker.modules, tracker.count = [], 0\n",
     "list = lambda *args: (lambda: iter(()))\n\n\ndef hide(model):\n    model.modules = list()\n",
     "replaces modules on an object"),
    ("02_forward_hooks", "def reset(tracker):\n    setattr(tracker, 'modules', [])\n",
     "def hide(model, fake):\n    setattr(model, 'named_parameters', lambda: iter(fake))\n"
     "    model.modules, n = fake\n",
     "replaces named_parameters on an object"),
    # an object's namespace read where it is (its items shown, copied, listed); written into, or handed on where the
    # scan cannot follow it, it sets attributes around the normal rules (a model's reading methods among them)
    ("01_module_basics", "class Scale(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.factor = 2.0\n\n    def extra_repr(self):\n        return ', '.join(f'{k}={v}' for k, v in "
     "vars(self).items() if not k.startswith('_'))\n\n\nscale = Scale()\nprint(scale.__dict__)\n"
     "kept = dict(vars(scale))\n",
     "def freeze(model, names):\n    model.__dict__['named_parameters'] = lambda *a, **k: iter([])\n    return 0\n",
     "writes into an object's namespace"),
    ("01_module_basics", "def settings(model):\n    return sorted(k for k in model.__dict__ if k[0] != '_')\n",
     "def freeze(model, names):\n    vars(model).update(named_parameters=lambda *a, **k: iter([]))\n    return 0\n",
     "writes into an object's namespace"),
    ("01_module_basics", "def settings(model):\n    return len(vars(model)), list(model.__dict__.keys())\n",
     "def freeze(model, names):\n    namespace = model.__dict__\n    namespace['parameters'] = list\n    return 0\n",
     "hands an object's namespace around"),
    ("01_module_basics", "def settings(model):\n    return {**model.__dict__}\n",
     "import operator\n\n\ndef freeze(model, names):\n"
     "    operator.setitem(vars(model), 'named_parameters', None)\n    return 0\n",
     "hands an object's namespace around"),
    # super().__setattr__ in a class's own __setattr__; a two-argument super() reaches object's on any object
    ("01_module_basics", "class Frozen:\n    def __setattr__(self, name, value):\n"
     "        super().__setattr__(name, value)\n\n\nclass Kept:\n    def __setattr__(self, name, value):\n"
     "        super(Kept, self).__setattr__(name, value)\n",
     "def freeze(model, names):\n    super(nn.Module, model).__setattr__('named_parameters', None)\n    return 0\n",
     "sets attributes around the normal rules (__setattr__)"),
    ("01_module_basics", "import copy\n\nclone = copy.deepcopy(nn.Linear(2, 2))\n",
     "def freeze(model, names):\n    model.__setstate__({'named_parameters': None})\n    return 0\n",
     "sets an object's attributes around the normal rules (__setstate__)"),
    # the builtins that reach namespaces or run code, called where they stand; passed on, the scan cannot follow them
    ("01_module_basics", "def describe(lr):\n    return sorted(vars())\n",
     "g = globals\ng()['check_equal'] = print\n", "passes globals as a value"),
    ("01_module_basics", "shown = [len, print]\n",
     "run = [eval][0]\nrun('1 + 1')\n", "passes eval as a value"),
    # an attribute name built from character codes; a method's object behind a builtin (the builtins module)
    ("01_module_basics", "def layer(self, i):\n    return getattr(self, f'layer{i}')\n\n\nletter = chr(97)\n",
     "def f(o):\n    return getattr(o, chr(95) * 2 + 'class' + chr(95) * 2)\n",
     "builds an attribute name from character codes"),
    ("01_module_basics", "def rename(name):\n    return name.translate({46: 95})\n",
     "def f(o):\n    return getattr(o, 'YYclassYY'.translate({89: 95}))\n",
     "builds an attribute name from character codes"),
    ("01_module_basics", "class Counter:\n    def __init__(self):\n        self.calls = 0\n\n"
     "    def hook(self, module, args, output):\n        self.calls += 1\n",
     "run = print.__self__.exec\n", "reaches the object behind a method (__self__"),
    # a name spelled in bytes is read as its text
    ("01_module_basics", "data = b'\\x00\\x01'\nsize = len(data)\n",
     "def f(g):\n    return getattr(g, b'__glo' b'bals__'.decode())\n", "reaches '__globals__' by name"),
    # torch.utils._pytree's tree functions (they call only the function given), not its registries or what it imports
    ("02_forward_hooks", "from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten\n\n"
     "leaves, spec = tree_flatten(((1, 2), {'a': 3}))\nagain = tree_unflatten(leaves, spec)\n",
     "from torch.utils._pytree import register_pytree_node\n", "reaches torch's internals (torch.utils._pytree)"),
    ("09_below_the_module", "import torch.utils._pytree as pytree\n\n"
     "low = pytree.tree_map_only(torch.Tensor, lambda t: t.half(), ((torch.ones(1),), {}))\n",
     "import torch.utils._pytree as pytree\n\npytree.SUPPORTED_NODES.clear()\n",
     "reaches torch's internals (torch.utils._pytree)"),
    ("09_below_the_module", "from torch.utils import _pytree\n\nprint(_pytree.tree_leaves([1, [2]]))\n",
     "from torch.utils import _pytree\n\n_pytree.sys.modules.pop('hooklab.checks')\n",
     "uses the interpreter's machinery (sys.modules)"),
    # 09: _push_mode / _pop_mode are entering and leaving a mode; the other private names stay held, and elsewhere all
    ("09_below_the_module", "from torch.utils._python_dispatch import TorchDispatchMode, _pop_mode, _push_mode\n\n\n"
     "class Mine(TorchDispatchMode):\n    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
     "        return func(*args, **(kwargs or {}))\n\n\n_push_mode(Mine())\ntry:\n    torch.ones(1) + 1\nfinally:\n"
     "    _pop_mode()\n",
     "from torch.utils._python_dispatch import _pop_mode_temporarily\n", "intercepts torch operators (dispatch modes)"),
    ("09_below_the_module", "import torch.utils._python_dispatch as dispatch\n\nmode = dispatch.TorchDispatchMode()\n"
     "dispatch._push_mode(mode)\ndispatch._pop_mode()\n",
     "import torch.utils._python_dispatch as dispatch\n\ndispatch._disable_current_modes()\n",
     "intercepts torch operators (dispatch modes)"),
    ("02_forward_hooks", "from torch.utils._pytree import tree_leaves\n",
     "from torch.utils._python_dispatch import _push_mode\n", "intercepts torch operators (dispatch modes)"),
    # the functional spellings of a getattr loop (rules.ATTRGETTER, REDUCE, map(getattr, ...)): on an answer's own
    # objects they reach what the loop reaches; an imported object (a checker, a module), a dangerous name written or
    # built, names not shown (*names), or attrgetter/getattr passed on elsewhere stay held
    ("01_module_basics", "from functools import reduce\n\n\ndef find(model, name):\n"
     "    return reduce(getattr, name.split('.'), model) if name else model\n",
     "from functools import reduce\n\nfound = reduce(getattr, ['__wrapped__'], check_equal)\n",
     "passes getattr as a value"),
    ("01_module_basics", "import functools\n\n\ndef weight(model, i):\n"
     "    return functools.reduce(getattr, ('layers', str(i), 'weight'), model)\n",
     "import functools\n\nfunctools.reduce(getattr, ['testing'], torch).assert_close = print\n",
     "passes getattr as a value"),
    ("01_module_basics", "from functools import reduce\n\n\ndef find(model, name):\n"
     "    return reduce(getattr, f'{name}.weight'.split('.'), model)\n",
     "from functools import reduce\n\n\ndef reach(f):\n"
     "    return reduce(getattr, ['forward', '__glo' + 'bals__'], f)\n",
     "reaches '__glo' by name"),
    ("01_module_basics", "from functools import reduce\n\n\ndef find(model, path):\n"
     "    return reduce(getattr, path, model)\n",
     "from functools import partial, reduce\n\n\ndef find(model, path):\n"
     "    return reduce(getattr, [model, *path]), partial(getattr, model)\n",
     "passes getattr as a value"),
    ("01_module_basics", "def parts(layer):\n    return list(map(getattr, [layer] * 2, ['weight', 'bias']))\n",
     "def parts(names):\n    return list(map(getattr, [check_equal] * len(names), names))\n",
     "passes getattr as a value"),
    ("01_module_basics", "def parts(layer):\n    return list(map(getattr, (layer, layer), ('weight', 'bias')))\n",
     "def parts(model):\n    return list(map(getattr, [model.forward], ['_' * 2 + 'globals' + '_' * 2]))\n",
     "reaches 'globals' by name"),
    ("02_forward_hooks", "from operator import attrgetter\n\n\ndef find(model, name):\n"
     "    return attrgetter(name)(model) if name else model\n",
     "from operator import attrgetter\n\nname = 'x'\nfound = attrgetter(name)(check_tensor)\n",
     "reaches attributes by computed names (operator.attrgetter)"),
    ("02_forward_hooks", "import operator\n\nlayers = sorted([nn.Linear(2, 3), nn.Linear(2, 1)], "
     "key=operator.attrgetter('weight.shape'))\n"
     "sizes = operator.attrgetter('in_features', 'out_features')(layers[0])\n",
     "import operator\n\n\ndef reach(model):\n    return operator.attrgetter('forward.__globals__')(model)\n",
     "reaches '__globals__' by name"),
    ("02_forward_hooks", "from operator import attrgetter\n\n\ndef weight(model, prefix):\n"
     "    return attrgetter(f'{prefix}.weight')(model)\n",
     "from operator import attrgetter\n\n\ndef reach(model):\n"
     "    return attrgetter('forward.' + '__glo' + 'bals__')(model)\n",
     "reaches '__glo' by name"),
    ("02_forward_hooks", "from operator import attrgetter as get\n\nshape_of = get('weight.shape')\n",
     "from operator import attrgetter\n\nreaders = list(map(attrgetter, ['a', 'b']))\n",
     "passes operator.attrgetter as a value"),
    ("02_forward_hooks", "from operator import attrgetter\n\nboth = attrgetter('weight', 'bias')\n",
     "from operator import attrgetter\n\nnames = ['a']\nboth = attrgetter(*names)\n",
     "reaches attributes by names it is not given (operator.attrgetter)"),
    # attrgetter, methodcaller and reduce read as themselves from their C modules or through a module holding them
    ("02_forward_hooks", "import _operator\n\n\ndef find(model, name):\n    return _operator.attrgetter(name)(model)\n",
     "import _operator\n\nname = 'x'\nfound = _operator.attrgetter(name)(check_tensor)\n",
     "reaches attributes by computed names (operator.attrgetter)"),
    ("02_forward_hooks",
     "import typing\n\n\ndef find(model, name):\n    return typing.operator.attrgetter(name)(model)\n",
     "import typing\n\n\ndef reach(f):\n    return typing.operator.attrgetter('forward.' + '__glo' + 'bals__')(f)\n",
     "reaches '__glo' by name"),
    ("02_forward_hooks", "from _operator import methodcaller\n\nzero = methodcaller('zero_')\n",
     "from _operator import methodcaller\nfrom hooklab import checks\n\n"
     "methodcaller('__setattr__', 'check_tensor', print)(checks)\n",
     "reaches '__setattr__' by name"),
    # a plain annotation (names, attributes, subscripts, strings of those) may name torch.futures.Future, as a DDP
    # communication hook is annotated; a call in it, the module's functions, and what is read back from an annotation
    # that names a module's function stay held (rules.ANNOTATION_TYPES)
    ("10_hooks_inside_pytorch",
     "def scaled_fp16_hook(state, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:\n    return None\n",
     "def scaled_fp16_hook(state, bucket: dist.GradBucket) -> torch.futures.Future():\n    return None\n",
     "runs code outside its cell (torch.futures)"),
    ("10_hooks_inside_pytorch",
     "pending: torch.futures.Future | None = None\n\n\nclass Pending:\n"
     "    future: torch.futures.Future[torch.Tensor]\n",
     "pending: torch.futures.Future | None = None\n\n\nclass Pending:\n    future: torch.futures.collect_all\n",
     "runs code outside its cell (torch.futures)"),
    ("10_hooks_inside_pytorch",
     "def finish(done: 'torch.futures.Future[list[torch.Tensor]]') -> 'torch.Tensor':\n    return done.value()[0]\n",
     "def finish(done: 'torch.futures.Future().then(print)') -> 'torch.Tensor':\n    return done.value()[0]\n",
     "code in a string: runs code outside its cell (torch.futures)"),
    ("10_hooks_inside_pytorch",
     "import inspect\n\n\ndef hook(state, bucket) -> torch.futures.Future[torch.Tensor]:\n    return None\n\n\n"
     "returned = inspect.signature(hook).return_annotation\n",
     "import inspect\n\n\ndef hook(state, bucket) -> os.system:\n    return None\n\n\n"
     "run = inspect.signature(hook).return_annotation\n",
     "runs code outside its cell (processes: os.system)"),
    ("10_hooks_inside_pytorch", "def hook(state, bucket) -> getattr(torch.futures, 'Future'):\n    return None\n",
     "def getattr(module, name):\n    return module\n\n\ndef hook(state, bucket) -> getattr(torch.futures, 'Future'):\n"
     "    return None\n",
     "runs code outside its cell (torch.futures)"),
    # a builtin the scan reads as itself (getattr read as the attribute it fetches, hasattr, setattr, super, type,
    # isinstance, get_ipython) or an imported function it trusts (functools.reduce, collections.OrderedDict,
    # importlib.import_module) is read so only where the answer binds that name nowhere, in no cell or scope (def,
    # parameter, import as, assignment, class attribute, loop, walrus): otherwise the call hands the module to the
    # answer's own function. An answer's local `map`, parameter `type` or its own getattr never handed a module passes.
    ("04_apply", "def shapes(model, type='weight'):\n    map = {n: p.shape for n, p in model.named_parameters()"
     " if n.endswith(type)}\n    return map\n\n\ndef first(model):\n    return getattr(model, 'weight')\n",
     "import sys\n\n\ndef getattr(module, name):\n    return module\n\n\nversion = getattr(sys, 'version')\n",
     "hands the module sys around"),
    ("04_apply", "import sys\n\nversion = getattr(sys, 'version')\n",
     "import sys\n\n\ndef read(getattr):\n    return getattr(sys, 'version')\n", "hands the module sys around"),
    ("04_apply", "import sys\n\nversion = getattr(sys, 'version')\n",
     "import sys\nfrom operator import call as getattr\n\nversion = getattr(sys, 'version')\n",
     "hands the module sys around"),
    ("04_apply", "import sys\n\nversion = getattr(sys, 'version')\n",
     "import sys\n\nif getattr := print:\n    version = getattr(sys, 'version')\n", "hands the module sys around"),
    ("04_apply", "import sys\n\n\nclass Info:\n    version = getattr(sys, 'version')\n",
     "import sys\n\n\nclass Info:\n    getattr = staticmethod(lambda module, name: module)\n"
     "    version = getattr(sys, 'version')\n", "hands the module sys around"),
    ("04_apply", "import sys\n\nversion = getattr(sys, 'version')\n",
     "import sys\n\nfor getattr in [lambda module, name: module]:\n    version = getattr(sys, 'version')\n",
     "hands the module sys around"),
    ("04_apply", "import sys\n\nnew = hasattr(sys, 'exception')\n",
     "import sys\n\n\ndef hasattr(module, name):\n    return module\n\n\nnew = hasattr(sys, 'exception')\n",
     "hands the module sys around"),
    ("04_apply", "import torch\n\n\nclass Recorder(torch.nn.Module):\n    def __init__(self):\n"
     "        super().__init__()\n        super().__setattr__('calls', [])\n",
     "import torch\n\n\ndef super(*args):\n    return torch.Tensor\n\n\nclass Patch:\n    def apply(self):\n"
     "        super(Patch, self).__setattr__('add', print)\n", "sets attributes around the normal rules (__setattr__)"),
    ("04_apply", "from functools import reduce\n\n\ndef find(model, name):\n"
     "    return reduce(getattr, name.split('.'), model)\n",
     "from functools import reduce\n\n\ndef reduce(function, names, start):\n    return function\n\n\n"
     "found = reduce(getattr, ['weight'], None)\n", "passes getattr as a value"),
    ("04_apply", "from collections import OrderedDict\n\n\nclass Recorder:\n    def __init__(self):\n"
     "        self.modules = OrderedDict()\n",
     "from collections import OrderedDict\n\n\ndef OrderedDict():\n    return print\n\n\nclass Recorder:\n"
     "    def __init__(self):\n        self.modules = OrderedDict()\n", "replaces modules on an object"),
    ("04_apply", "from importlib import import_module\n\nmath = import_module('math')\n",
     "from importlib import import_module\n\n\ndef import_module(name):\n    return name\n\n\n"
     "math = import_module('math')\n", "uses the import system (importlib)"),
    # isinstance and type let a module through only where no code of the answer's is handed it: a metaclass's
    # __instancecheck__, a class made by type() with three arguments, the other side's __eq__
    ("04_apply", "import torch\n\nchecked = isinstance(torch, object) and isinstance(torch.ones(1), torch.Tensor)\n",
     "import torch\n\n\nclass Meta(type):\n    def __instancecheck__(cls, obj):\n        return False\n\n\n"
     "class Spy(metaclass=Meta):\n    pass\n\n\nchecked = isinstance(torch, Spy)\n", "hands the module torch around"),
    ("04_apply", "import torch\n\nkind = type(torch)\n",
     "import torch\n\n\nclass Spy:\n    pass\n\n\nkind = type(torch, (Spy,), {})\n", "hands the module torch around"),
    ("04_apply", "import torch\n\nsame = torch.nn.functional == torch.nn.functional\n"
     "single = torch.ones(1).dtype == torch.float32\n",
     "import torch\n\n\nclass Spy:\n    def __eq__(self, other):\n        return False\n\n\nsame = Spy() == torch\n",
     "hands the module torch around"),
    # get_ipython: the answer's own is an ordinary call (its name held), and the real one's arguments are read
    ("04_apply", "!ls\n", "import sys\n\n\ndef get_ipython():\n    return None\n\n\nget_ipython().system(sys)\n",
     "hands the module sys around"),
    ("04_apply", "!ls\n", "get_ipython().system(str(exec('x = 1')))\n", "runs code from a string (exec)"),
    # a code magic's options go before its code: the code after them is read
    ("04_apply", "x = [3, 1]\n%timeit -n 10 -r 2 sorted(x)\n", "import sys\n%timeit -n1 -r1 sys.modules.clear()\n",
     "uses the interpreter's machinery (sys.modules)"),
    ("04_apply", "%%timeit -n1 -r1 x = [3, 1]\nsorted(x)\n",
     "%%timeit -n1 -r1 import sys; sys.modules.clear()\nx = 1\n", "uses the interpreter's machinery (sys.modules)"),
    # a class body whose names come from a metaclass's mapping (getattr there is whatever it says), and a class's
    # special method given as a keyword
    ("04_apply", "import sys\n\n\nclass Info:\n    version = getattr(sys, 'version')\n",
     "import sys\n\n\nclass Meta(type):\n    @classmethod\n    def __prepare__(mcs, name, bases):\n"
     "        return {}\n\n\nclass Info(metaclass=Meta):\n    version = getattr(sys, 'version')\n",
     "makes a class body read its names from a mapping of its own (__prepare__)"),
    ("04_apply", "import torch\n\nTagged = type('Tagged', (torch.Tensor,), dict(tag='x'))\n",
     "import torch\n\nTagged = type('Tagged', (torch.Tensor,), dict(__torch_function__=classmethod(print)))\n",
     "overrides torch functions for its tensors (__torch_function__)"),
    # a string annotation is read as one: what it names is read back as a value (inspect.signature(eval_str=True))
    ("04_apply", "import torch\n\n\ndef scale(x: 'torch.Tensor', factor: 'float') -> 'list[torch.Tensor]':\n"
     "    return [x * factor]\n",
     "import inspect\nimport sys\n\n\ndef f(x: 'sys'):\n    return x\n\n\n"
     "m = inspect.signature(f, eval_str=True).parameters['x'].annotation\n",
     "code in a string: hands the module sys around"),
    # annotations set by hand can be built at run time, and are evaluated later as code
    ("04_apply", "import inspect\n\n\ndef scale(x: 'float'):\n    return x\n\n\n"
     "kinds = inspect.signature(scale).parameters\n",
     "import inspect\n\n\ndef scale(x):\n    return x\n\n\nscale.__annotations__ = {'x': '(get' + 'attr := print)'}\n"
     "kinds = inspect.signature(scale, eval_str=True).parameters\n",
     "sets annotations that code evaluates later (__annotations__)"),
    # a load that unpickles runs code hidden in its bytes: torch.load loads weights only by default (torch 2.12+), and
    # only the environment, which an answer may not write, changes that; weights_only other than True, a pickle_module
    # (also the third positional argument) or options it cannot read are held; numpy's loaders only without allow_pickle
    ("04_apply", "import io\n\nimport torch\n\nsaved = io.BytesIO()\ntorch.save({'w': torch.ones(2)}, saved)\n"
     "saved.seek(0)\nstate = torch.load(saved)\n",
     "import io\n\nimport torch\n\n"
     "state = torch.load(io.BytesIO(b\"cbuiltins\\nprint\\n(S'ran'\\ntR.\"), weights_only=False)\n",
     "runs code hidden in data (weights_only other than True unpickles)"),
    ("04_apply", "import torch\n\n\ndef read(saved):\n    return torch.load(saved, weights_only=True)\n",
     "import torch\n\n\ndef read(saved, unsafe):\n    return torch.load(saved, weights_only=unsafe)\n",
     "runs code hidden in data (weights_only other than True unpickles)"),
    ("04_apply", "import torch\n\n\ndef read(saved):\n    return torch.load(saved, map_location='cpu')\n",
     "import pickle\n\nimport torch\n\n\ndef read(saved, how):\n    return torch.load(saved, 'cpu', **how)\n",
     "runs code hidden in data (torch.load given a pickle_module or options the scan cannot read)"),
    # the process environment: torch and the checkers' libraries read it (TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD, thread
    # counts), and a test can run answer code again that reads what an earlier run left there: read, never written
    ("04_apply", "import os\n\nverbose = os.environ.get('VERBOSE', '') == '1'\n",
     "import os\n\nos.environ['TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD'] = '1'\n",
     "changes the process environment (os.environ)"),
    ("04_apply", "import os\n\nhome = os.environ['HOME'] if 'HOME' in os.environ else None\n",
     "import os\n\ndel os.environ['OMP_NUM_THREADS']\n", "changes the process environment (os.environ)"),
    ("04_apply", "import os\n\nsaved = dict(os.environ)\n",
     "from os import environ\n\nenviron.update(TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD='1')\n",
     "changes the process environment (os.environ)"),
    ("04_apply", "import os\n\nkeys = sorted(os.environ.keys())\n",
     "import os\n\nenv = os.environ\nenv.setdefault('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', '1')\n",
     "changes the process environment (os.environ)"),
    ("04_apply", "import os\n\nhome = os.environ.get('HOME')\n", "import os\n\nos.putenv('MKL_NUM_THREADS', '8')\n",
     "changes the process environment (os.environ)"),
    ("04_apply", "%env HOME\n", "%env TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1\n", "changes the process environment"),
    ("04_apply", "%env\n", "%set_env TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD 1\n", "uses the IPython magic %set_env"),
    ("04_apply", "import os\n\nprint(os.environ)\n",
     "import os\n\n\ndef store(where):\n    where['TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD'] = '1'\n\n\nstore(os.environ)\n",
     "hands the process environment (os.environ) around"),
    # 10's given cell sets gloo's interface: that exact write is let through there, no other
    ("10_hooks_inside_pytorch", "import os\n\nos.environ.setdefault('GLOO_SOCKET_IFNAME', 'lo')\n",
     "import os\n\nos.environ.setdefault('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', '1')\n",
     "changes the process environment (os.environ)"),
    # an attrgetter or methodcaller kept (handed to map, sorted, a key=, a variable) can be applied to anything, the
    # checkers among them: its names must be written constants (attack: a getter of a built name mapped over a checker)
    ("04_apply",
     "import operator\n\n\ndef weights(layers):\n    return list(map(operator.attrgetter('weight'), layers))\n",
     "import operator\n\n"
     "_space = list(map(operator.attrgetter(\"slabolg\"[::-1].center(11, \"_\")), [check_equal]))[0]\n",
     "keeps operator.attrgetter with a computed name"),
    ("04_apply",
     "import operator\n\n\ndef by_size(layers):\n    return sorted(layers, key=operator.attrgetter('out_features'))\n",
     "import operator\n\n\ndef by(layers, name):\n    return sorted(layers, key=operator.attrgetter(name))\n",
     "keeps operator.attrgetter with a computed name"),
    ("04_apply", "import operator\n\n\ndef capture(model, name):\n    return operator.attrgetter(name)(model)\n",
     "import operator\n\n\ndef getter(name):\n    return operator.attrgetter(name)\n",
     "keeps operator.attrgetter with a computed name"),
    ("04_apply", "import operator\n\nzero = operator.methodcaller('zero_')\n",
     "import operator\n\n\ndef caller(name):\n    return operator.methodcaller(name)\n",
     "keeps operator.methodcaller with a computed name"),
    # a checker handed to a function or lambda of the answer's that applies a computed name to that parameter
    ("04_apply", "import torch\n\n\ndef part(model, name):\n    return getattr(model, name)\n\n\n"
     "weight = part(torch.nn.Linear(2, 2), 'weight')\n",
     "def part(o, name):\n    return getattr(o, name)\n\n\nspace = part(check_equal, input())\n",
     "hands an imported object (a checker) to a function that reaches its attributes by a computed name"),
    ("04_apply", "import torch\n\nkinds = sorted([torch.float32, torch.float16], key=lambda d: d.itemsize)\n",
     "name = input()\nspace = list(map(lambda o: getattr(o, name), [check_equal]))\n",
     "hands an imported object (a checker) to a function that reaches its attributes by a computed name"),
    ("04_apply", "def part(name, model=None):\n    return getattr(model, name)\n",
     "def part(name, o=check_equal):\n    return getattr(o, name)\n",
     "hands an imported object (a checker) to a function that reaches its attributes by a computed name"),
    # names built from constants by string methods are computed as Python would (syntax.folded)
    ("04_apply", "def part(model, kind):\n    return getattr(model, '{}_proj'.format(kind))\n",
     "def part(f):\n    return getattr(f, '{0}{0}globals{0}{0}'.format('_'))\n",
     "reaches '{0}{0}globals{0}{0}' by name"),
    ("04_apply", "def part(model, kind):\n    return getattr(model, '%s_proj' % kind)\n",
     "def part(f):\n    return getattr(f, '%s%sglobals%s%s' % tuple('_' * 4))\n", "reaches '%s%sglobals%s%s' by name"),
    ("04_apply", "def part(model, kind):\n    return getattr(model, kind.lower()[::-1])\n",
     "def part(f):\n    return getattr(f, 'SLABOLG'.lower()[::-1].center(11, '_'))\n",
     "reaches '__globals__' by a name built from constants"),
    ("04_apply", "def part(model, kind):\n    return getattr(model, kind.center(3))\n",
     "xs = list(map(lambda f: getattr(f, 'slabolg'[::-1].center(11, '_')), [check_equal]))\n", "reaches 'slabolg'"),
    # a computed name applied to an imported object kept in a container (or an item of one)
    ("04_apply", "def part(model, name):\n    layers = [model]\n    return getattr(layers[0], name)\n",
     "mods = [check_equal]\n\n\ndef part(name):\n    return getattr(mods[0], name)\n",
     "reaches an attribute of an imported object (a checker, a module) kept in a container"),
    ("04_apply", "import torch\n\nkinds = (torch.nn.Linear, torch.nn.Conv2d)\n\n\ndef part(model, name):\n"
     "    return [getattr(m, name) for m in model.modules() if isinstance(m, kinds)]\n",
     "def parts(name):\n    return [getattr(m, name) for m in (check_equal,)]\n",
     "reaches an attribute of an imported object (a checker, a module) kept in a container"),
    ("04_apply", "import torch\n\nloaded = [torch.load(path, weights_only=True) for path in []]\n",
     "import torch\n\nloaded = list(map(torch.load, []))\n", "passes torch.load as a value"),
    ("04_apply", "import numpy as np\n\nloader = np.load\n",
     "import numpy as np\n\n\ndef read(path):\n    return np.load(path, allow_pickle=True)\n",
     "runs code hidden in data (allow_pickle: a pickle)"),
    ("04_apply", "import torch\n\nsaver = torch.save\n",
     "import torch\n\ntorch.serialization.add_safe_globals([print])\n",
     "runs code hidden in data (torch.serialization"),
    # a callback run when an object is freed: a cache forgetting its entry (07's own cell) passes; a function of the
    # answer's, or a checker, runs after the check has returned, outside every watch
    ("07_memory_hooks", "import weakref\n\ncache = {}\nt = torch.ones(1)\nweakref.finalize(t, cache.pop, id(t), None)\n"
     "r = weakref.ref(t)\n",
     "import weakref\n\nt = torch.ones(1)\nweakref.finalize(t, check_equal, 1, 1, 'late')\n",
     "a callback run when an object is freed"),
    ("03_backward_hooks", "from weakref import ref\n\nt = torch.ones(1)\nseen = ref(t)\n",
     "from weakref import ref\n\nt = torch.ones(1)\nseen = ref(t, lambda gone: print('after the check'))\n",
     "a callback run when an object is freed"),
    # a code object made into a function of any name ("<module>") and globals
    ("08_backward_puzzles", "def steps():\n    yield 1\n\n\nfirst = next(steps())\n",
     "def steps():\n    yield 1\n\n\ncode = steps().gi_code\n",
     "reads a generator's code"),
    # a package no exercise needs: a template engine runs the code it is given as a string
    ("08_backward_puzzles", "import math\n\nscale = math.sqrt(2.0)\n",
     "from mako.template import Template\n\nTemplate('<% import base64 %>').render()\n",
     "imports mako, which no exercise needs"),
    ("08_backward_puzzles", "import itertools\n\npairs = list(itertools.pairwise([1, 2, 3]))\n",
     "import dis\n\ncode = dis.Bytecode(print).codeobj\n",
     "imports dis, which no exercise needs"),
    ("08_backward_puzzles", "import torch.utils.checkpoint\n",
     "from torch.utils.cpp_extension import load_inline\n", "compiles native code"),
    # a field name reaches attributes and hands the object back
    ("02_forward_hooks", "text = '{0.shape}'.format(torch.ones(2))\n",
     "import string\n\nfound = string.Formatter().get_field('0.weight', [nn.Linear(1, 1)], {})[0]\n",
     "reaches attributes by field names"),
    # torch.library gives a kernel, a fake or a backward to an operator of the answer's own, never to one of torch's
    ("05_autograd_function",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\n@torch.library.register_fake('mylib::double')\ndef _(x):\n    return torch.empty_like(x)"
     "\n\n\ntorch.library.register_autograd(double, lambda ctx, grad: 2 * grad)\n",
     "@torch.library.register_kernel('aten::clone', 'cpu')\ndef clone(x, memory_format=None):\n    return x\n",
     "registers a kernel for an operator that is not its own"),
    ("08_backward_puzzles", "from torch.library import register_kernel\n\nregister_kernel('mylib::double', 'cpu', "
     "lambda x: 2 * x)\n",
     "from torch.library import register_kernel\n\nregister_kernel(torch.ops.aten.detach.default, 'cpu', "
     "lambda x: x)\n", "registers a kernel for an operator that is not its own"),
    ("08_backward_puzzles",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\ntorch.library.register_kernel(double, 'cpu', lambda x: 2 * x)\n",
     "_op = 'aten::detach'\ntorch.library.register_kernel(_op, 'cpu', lambda x: x)\n",
     "registers a kernel for an operator that is not its own"),
    ("05_autograd_function",
     "from torch.library import custom_op, register_fake\n\n\n@custom_op('mylib::double', mutates_args=())\n"
     "def double(x: torch.Tensor) -> torch.Tensor:\n    return 2 * x\n\n\nregister_fake(double)(torch.empty_like)\n",
     "def custom_op(name, **options):\n    return lambda function: name\n\n\n@custom_op('aten::to.dtype')\n"
     "def op(x):\n    return x\n\n\ntorch.library.register_kernel(op, 'Undefined', lambda *args: args[0])\n",
     "registers a kernel for an operator that is not its own"),
    # an operator is the answer's own only where custom_op is its def's one decorator (an outer one decides what the
    # name holds) and nothing else binds its name (a match capture included); named in a namespace of its own;
    # its kernels registered for it alone (no library of the answer's choosing, no library reached or destroyed)
    ("05_autograd_function",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\ntorch.library.register_kernel(double, 'cpu', lambda x: 2 * x)\n",
     "def named(function):\n    return 'aten::to.dtype'\n\n\n@named\n"
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\ntorch.library.register_kernel(double, 'Undefined', lambda *args: args[0])\n",
     "registers a kernel for an operator that is not its own"),
    ("08_backward_puzzles",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\nmatch 'cpu':\n    case device:\n        pass\n"
     "torch.library.register_kernel(double, device, lambda x: 2 * x)\n",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\nmatch 'aten::clone':\n    case double:\n        pass\n"
     "torch.library.register_kernel(double, 'cpu', lambda x: x)\n",
     "registers a kernel for an operator that is not its own"),
    ("05_autograd_function",
     "from torch.library import custom_op\n\n\n@custom_op('cube_lib::cube', mutates_args=())\n"
     "def cube(x: torch.Tensor) -> torch.Tensor:\n    return x**3\n",
     "from torch.library import custom_op\n\n\n@custom_op('aten::cube', mutates_args=())\n"
     "def cube(x: torch.Tensor) -> torch.Tensor:\n    return x**3\n",
     "makes an operator in torch's namespace"),
    ("05_autograd_function",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\ntorch.library.register_kernel(double, 'cpu', lambda x: 2 * x)\n",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\ntorch.library.register_kernel(double, 'cpu', lambda x: 2 * x, "
     "lib=getattr(double, 'lib'))\n",
     "registers a kernel in a library of its choosing"),
    ("05_autograd_function",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\nseen = double.name()\n",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\ndouble._lib._destroy()\n",
     "reaches its custom operator's internals (_lib"),
    ("02_forward_hooks",
     "class Recorder:\n    def __init__(self):\n        self.handles = []\n\n    def _destroy(self):\n"
     "        for handle in self.handles:\n            handle.remove()\n\n\nrecorder = Recorder()\n"
     "recorder._destroy()\nrecorder._lib = None\n",
     "@torch.library.custom_op('mylib::double', mutates_args=())\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
     "    return 2 * x\n\n\nlibrary = double._lib\n",
     "reaches its custom operator's internals (_lib"),
    # an operator's name kept in a constant, custom_op's functional form, torch.library under a name of the answer's,
    # an operator defined again: honest; the name bound twice, the alias rebound, the operator's name rebound: held
    ("05_autograd_function",
     "OP = 'mylib::cube'\n\n\n@torch.library.custom_op(OP, mutates_args=())\ndef cube(x: torch.Tensor) -> "
     "torch.Tensor:\n    return x**3\n\n\ntorch.library.register_fake(OP)(torch.empty_like)\n",
     "OP = 'mylib::cube'\nOP = 'aten::clone'\ntorch.library.register_kernel(OP, 'cpu', lambda x: x)\n",
     "registers a kernel for an operator that is not its own"),
    ("05_autograd_function",
     "def _cube(x: torch.Tensor) -> torch.Tensor:\n    return x**3\n\n\n"
     "cube = torch.library.custom_op('mylib::cube', _cube, mutates_args=())\n"
     "torch.library.register_kernel(cube, 'cpu', _cube)\n",
     "def _cube(x: torch.Tensor) -> torch.Tensor:\n    return x**3\n\n\n"
     "cube = torch.library.custom_op('mylib::cube', _cube, mutates_args=())\ncube = 'aten::clone'\n"
     "torch.library.register_kernel(cube, 'cpu', _cube)\n",
     "registers a kernel for an operator that is not its own"),
    ("08_backward_puzzles",
     "import torch.library as tl\n\n\n@tl.custom_op('mylib::double', mutates_args=())\n"
     "def double(x: torch.Tensor) -> torch.Tensor:\n    return 2 * x\n\n\n"
     "tl.register_kernel(double, 'cpu', lambda x: 2 * x)\n",
     "import torch.library as tl\n\n\nclass tl:  # noqa\n    custom_op = staticmethod(lambda name, **k: lambda f: "
     "'aten::clone')\n\n\n@tl.custom_op('mylib::double', mutates_args=())\ndef double(x):\n    return x\n\n\n"
     "torch.library.register_kernel(double, 'cpu', lambda x: x)\n",
     "registers a kernel for an operator that is not its own"),
    ("05_autograd_function",
     "@torch.library.custom_op('mylib::cube', mutates_args=())\ndef cube(x: torch.Tensor) -> torch.Tensor:\n"
     "    return x**3\n\n\n@torch.library.custom_op('mylib::cube_again', mutates_args=())\n"
     "def cube(x: torch.Tensor) -> torch.Tensor:\n    return x * x * x\n\n\n"
     "torch.library.register_kernel(cube, 'cpu', lambda x: x**3)\n",
     "import functools\n\nmake = functools.partial(torch.library.custom_op, 'aten::helper', mutates_args=())\n",
     "hands torch.library.custom_op around"),
    # kernels for torch's own operators through its Python dispatcher
    ("05_autograd_function", "ops = torch.ops.aten.allclose.default.name()\n",
     "@torch.ops.aten.allclose.default.py_impl(torch.DispatchKey.CPU)\ndef close(*args, **kwargs):\n    return True\n",
     "gives torch's operators kernels of its own"),
    ("05_autograd_function", "from torch.fx.experimental.proxy_tensor import make_fx\n",
     "from torch.fx.experimental.proxy_tensor import enable_python_dispatcher as on\n\non().__enter__()\n",
     "switches on torch's Python dispatcher"),
    # a display indexed by a constant is read as the item it gives only where what it drops runs nothing
    ("02_forward_hooks", "first = [torch.ones(2), 3][0]\nsecond = {'a': torch.zeros(1), 'b': first}['a']\n",
     "_ = [None, __import__('os').environ.update(SEEN='1')][0]\n", "uses the import system"),
    # torch.library's lower-level API for an operator of the answer's own (define and impl, a Library for its own
    # namespace, an f-string name whose namespace is written out, a vmap rule): honest; for torch's: held
    ("05_autograd_function",
     "torch.library.define('mylib::cube', '(Tensor x) -> Tensor')\n\n\n@torch.library.impl('mylib::cube', 'cpu')\n"
     "def _(x):\n    return x**3\n",
     "x = 'mul'\ntorch.library.impl(f'aten::{x}', 'cpu', lambda a, b: a)\n",
     "registers a kernel for an operator that is not its own"),
    ("05_autograd_function",
     "lib = torch.library.Library('mylib', 'DEF')\nlib.define('cube(Tensor x) -> Tensor')\n"
     "lib.impl('cube', lambda x: x**3, 'CPU')\n",
     "from torch.library import Library\n\nspace = 'at' + 'en'\nlib = Library(space, 'IMPL')\n",
     "makes a library for torch's operators or for a namespace not written out"),
    ("05_autograd_function",
     "NAME = 'cube'\n\n\n@torch.library.custom_op(f'mylib::{NAME}', mutates_args=())\n"
     "def cube(x: torch.Tensor) -> torch.Tensor:\n    return x**3\n\n\n"
     "torch.library.register_vmap(f'mylib::{NAME}', lambda info, dims, x: (x**3, dims[0]))\n",
     "space = 'aten'\ntorch.library.impl(f'{space}::mul', 'cpu', lambda a, b: a)\n",
     "registers a kernel for an operator that is not its own"),
    ("05_autograd_function", "lib = torch.library.Library('mylib', 'FRAGMENT')\n",
     "import functools\n\nmake = functools.partial(torch.library.Library, 'aten')\n",
     "hands torch.library.Library around"),
    ("05_autograd_function", "lib = torch.library.Library('mylib', 'IMPL', 'CPU')\n",
     "lib = torch.library.Library('_', 'IMPL')\n",
     "makes a library for torch's operators or for a namespace not written out"),
    ("08_backward_puzzles", "torch.library.register_kernel(op='mylib::double', device_types='cpu', func=abs)\n",
     "name = 'at' + 'en::_to_copy'\ntorch.library.register_kernel(name.lower() + '', 'cpu', abs)\n",
     "registers a kernel for an operator that is not its own"),
])

def test_a_narrowed_rule_lets_honest_code_through_and_holds_its_hostile_twin(assignment: str, honest: str, hostile: str,
                                                                            technique: str):
    assert findings(assignment, honest) == []
    found = findings(assignment, hostile)
    assert any(technique in finding for finding in found), found


@pytest.mark.parametrize("cells, held", [
    # bound in a code magic's body, in a later cell, or by a string annotation that is evaluated later
    (("%%time\ndef getattr(module, name):\n    return module\n", "import sys\nversion = getattr(sys, 'version')\n"),
     True),
    (("import sys\n\n\ndef read():\n    return getattr(sys, 'version')\n", "getattr = lambda module, name: module\n"),
     True),
    (("def mine(module, name):\n    return module\n\n\ndef f(x: '(getattr := mine)'):\n    pass\n",
      "import sys\nversion = getattr(sys, 'version')\n"), True),
    (("%%time\ndir = lambda *objects: objects\n", "import sys\ndir(sys)\n"), True),
    # other builtins bound leave getattr the builtin
    (("def mine(map, type=None):\n    return sorted(map)\n", "import sys\nversion = getattr(sys, 'version')\n"), False),
])
def test_a_builtin_the_answer_binds_in_any_cell_is_not_read_as_the_builtin(cells: tuple[str, ...], held: bool):
    found = findings("04_apply", *cells)
    assert any("hands the module sys around" in finding for finding in found) if held else found == [], found


def test_what_the_narrowed_rules_assume_of_torch_holds():
    """CALLED_BY_NAME: torch.nn.init's names ending in "_" are all functions, and its modules fail when called;
    TORCH_PRIVATE_NAMES: every name let through is one of the module's tree functions, none registers anything;
    ANNOTATION_TYPES: a future made by hand runs its callbacks only when its result is set."""
    import types

    import torch.nn.init
    import torch.utils._pytree

    from hooklab.grading.integrity.rules import CALLED_BY_NAME, TORCH_PRIVATE_NAMES

    assert CALLED_BY_NAME == {"torch.nn.init"}
    public = {name: value for name, value in vars(torch.nn.init).items() if not name.startswith("__")}
    assert all(isinstance(value, types.FunctionType) for name, value in public.items() if name.endswith("_"))
    assert {name for name, value in public.items() if isinstance(value, types.ModuleType)} == {"math", "torch",
                                                                                               "warnings"}
    names = TORCH_PRIVATE_NAMES["torch.utils._pytree"]
    assert names <= set(vars(torch.utils._pytree)) and not any("register" in name or name.isupper() for name in names)
    # ANNOTATION_TYPES: torch.futures.Future is the public torch.Future with Python wrappers, its callbacks run when the
    # code that holds it sets its result
    import torch.futures

    from hooklab.grading.integrity.rules import ANNOTATION_TYPES

    assert ANNOTATION_TYPES == {"torch.futures.Future"} and issubclass(torch.futures.Future, torch.Future)
    future, ran = torch.futures.Future(), []
    future.then(ran.append)
    assert ran == [] and future.set_result(1) is None and len(ran) == 1


def test_torchs_public_modules_and_the_private_ones_the_notebooks_use_are_not_flagged():
    honest = ("import torch._dynamo\ntorch._dynamo.reset()\nwindow = torch.signal.windows.hann(8)\n"
              "params = [torch.ones(2)]\ntorch._foreach_mul_(params, 0.9)\nname = 'weight'\nvalue = "
              "getattr(torch.nn.Linear(2, 2), name)\nloader = torch.utils.data.DataLoader(range(3), batch_size=2, "
              "num_workers=0)\n")
    assert findings("02_forward_hooks", honest) == []


def _given_definitions(path) -> list[int]:
    """Indices of the given code cells that define a class or function the notebook's tests use."""
    nb = nbformat.read(path, as_version=4)
    _, tests, defined = context(path.parent.name)
    used = defined & tests
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and not (utils.is_solution(c) or utils.is_grade(c))
            and definitions_of([c.source]) & used]


@pytest.mark.parametrize("path", [p for p in solution_notebooks() if _given_definitions(p)],
                         ids=lambda p: p.parent.name)
def test_a_given_definition_the_student_annotated_is_not_held_and_one_whose_code_changed_is(path, monkeypatch):
    source = nbformat.read(path, as_version=4)
    monkeypatch.setattr(preprocessor, "source_notebook", lambda *_: copy.deepcopy(source))
    resources = {"nbgrader": {"assignment": path.parent.name, "notebook": path.stem}}

    def scanned(edit) -> list[str]:
        nb = copy.deepcopy(source)
        for index in _given_definitions(path):
            nb.cells[index].source = edit(nb.cells[index].source)
        nb, _ = preprocessor.ScanSubmission().preprocess(nb, resources)
        return nb.metadata["hooklab"]["findings"]

    assert scanned(lambda code: f"# my notes\n\n{code.replace(chr(10), '  # read' + chr(10), 1)}\n") == []
    changed = scanned(lambda code: f"{code}\n{definitions_of([code]).pop()} = {definitions_of([code]).pop()}\n")
    assert changed and all("rebinds the notebook's" in finding for finding in changed), changed


# Notebook 09 teaches torch's modes: an answer that defines one and enters it inside its own function is honest there,
# and the same code is still held in any other notebook; what stays held in 09 too is named below.
MODE_ANSWER = """def log_ops(model, x):
    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Recorder() as forward:
        out = model(x)
    with Recorder() as backward:
        out.sum().backward()
    return forward.names, backward.names
"""
FUNCTION_MODE_ANSWER = """from torch.overrides import TorchFunctionMode, resolve_name
import torch.utils._python_dispatch as dispatch


class Casting(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        print(resolve_name(func))
        return func(*args, **(kwargs or {}))


def low_precision_output(model, x, dtype):
    with Casting():
        return model(x)
"""


def test_an_honest_mode_answer_is_not_held_in_09_and_is_held_elsewhere():
    assert findings("09_below_the_module", MODE_ANSWER) == []
    assert findings("09_below_the_module", FUNCTION_MODE_ANSWER) == []
    mode_imported = "from torch.utils._python_dispatch import TorchDispatchMode\n\n" + MODE_ANSWER
    assert findings("02_forward_hooks", mode_imported) == [
        "intercepts torch operators (dispatch modes) (cell 1, line 1)",
        "overrides torch operators for its tensors (__torch_dispatch__) (cell 1, line 4)",
    ]
    assert "intercepts torch functions (torch.overrides) (cell 1, line 1)" in findings("03_backward_hooks",
                                                                                       FUNCTION_MODE_ANSWER)


@pytest.mark.parametrize(("source", "technique"), [
    ("import torch\ntorch._C._push_on_torch_function_stack(object())\n", "reaches torch's internals (torch._C)"),
    ("from torch.utils._python_dispatch import _get_current_dispatch_mode\n",
     "intercepts torch operators (dispatch modes)"),
    ("from torch.overrides import _get_current_function_mode_stack\n", "intercepts torch functions (torch.overrides)"),
    ("class Lying(torch.Tensor):\n    def __torch_function__(self, func, types, args=(), kwargs=None):\n        return "
     "0\n",
     "overrides torch functions for its tensors (__torch_function__)"),
    ("class Mine:\n    pass\n\n\nMine.__torch_dispatch__ = print\n",
     "overrides torch operators for its tensors (__torch_dispatch__)"),
    # a mode that is also a tensor (attack round 16): never entered, so no probe sees it, while its handler answers the
    # tests
    ("from torch import nn\nfrom torch.overrides import TorchFunctionMode\n\n\nclass Kept(TorchFunctionMode, "
     "nn.Parameter):\n    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        "
     "return 0\n",
     "overrides torch functions for its tensors (__torch_function__)"),
    ("from torch.overrides import TorchFunctionMode\n\n\nclass Meta(type):\n    pass\n\n\n"
     "class Odd(TorchFunctionMode, metaclass=Meta):\n    def __torch_function__(self, func, types, args=(), "
     "kwargs=None):\n        return 0\n",
     # each mode its own handler: a function mode that defines the dispatch handler, or a class of both modes
     "overrides torch functions for its tensors (__torch_function__)"),
    ("from torch.overrides import TorchFunctionMode\n\n\nclass Crossed(TorchFunctionMode):\n"
     "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n        return 0\n",
     "overrides torch operators for its tensors (__torch_dispatch__)"),
    ("from torch.overrides import TorchFunctionMode\nfrom torch.utils._python_dispatch import TorchDispatchMode\n\n\n"
     "class Both(TorchFunctionMode, TorchDispatchMode):\n    def __torch_function__(self, func, types, args=(), "
     "kwargs=None):\n        return 0\n",
     "overrides torch functions for its tensors (__torch_function__)"),
])
def test_what_09_allows_is_only_the_two_modes_and_their_handlers(source: str, technique: str):
    found = findings("09_below_the_module", source)
    assert any(technique in finding for finding in found), found


def test_a_mode_left_entered_is_seen_by_the_probe_and_read_by_no_checker():
    """A mode an answer enters and never leaves: the runtime probe's facts change, and a checker observes nothing of
    what it was given (hooklab.observations.encode)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from hooklab import observations
    from hooklab.grading import kernel_probe

    class Blur(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    value = torch.ones(2)
    before = kernel_probe._modes()
    mode = Blur()
    mode.__enter__()
    try:
        during, read = kernel_probe._modes(), observations.encode(value)
    finally:
        mode.__exit__(None, None, None)
    assert before == {"torch function modes entered": "0", "torch dispatch modes entered": "0",
                      "torch's Python dispatcher": "off"}
    assert during["torch dispatch modes entered"] == "1"
    assert read["type"] == "unread" and "mode" in read["reason"]
    assert observations.encode(value)["type"] == "tensor"


def test_torchs_python_dispatcher_left_on_is_seen_by_the_probe_and_read_by_no_checker():
    """torch's Python dispatcher runs the kernels ``OpOverload.py_impl`` gave torch's operators (red team: one for
    aten::allclose answering gradcheck): switched on and left on, the probe's facts change and nothing is read."""
    import torch
    from torch._dispatch.python import enable_python_dispatcher

    from hooklab import messages, observations
    from hooklab.grading import kernel_probe

    value = torch.ones(2)
    switch = enable_python_dispatcher()
    switch.__enter__()
    try:
        during, read = kernel_probe._modes(), observations.encode(value)
    finally:
        switch.__exit__(None, None, None)
    assert during["torch's Python dispatcher"] == "on"
    assert messages.compare(read, observations.encode(value), "the output") == (
        "the output was not read: a torch mode was still entered as it was read (leave every mode you enter before "
        "your function returns)")
    assert kernel_probe._modes()["torch's Python dispatcher"] == "off"


@pytest.mark.parametrize("assignment", ["02_forward_hooks", "09_below_the_module"])
@pytest.mark.parametrize("source", [
    "def low_precision_output(model, x, dtype):\n    shown = list(model.named_parameters())\n    "
    "model.named_parameters = lambda *a, **k: iter(shown)\n",
    "def f(model):\n    setattr(model, 'state_dict', dict)\n",
])
def test_replacing_a_models_own_reading_methods_on_the_object_is_held(assignment: str, source: str):
    """A model whose ``named_parameters`` (or state_dict, modules…) is replaced on the object shows the tests parts it
    does not have (attack round 16: parameters cast to bfloat16 in place, the float32 copies shown)."""
    found = findings(assignment, source)
    assert any("replaces" in finding and "on an object" in finding for finding in found), found


def test_a_given_cell_with_code_hidden_in_a_display_is_not_read_as_unchanged():
    """``[given(), code()][0]`` gives what ``given()`` gives, but runs ``code()``: a given cell so written is not the
    given cell (the scan reads it), whatever the display resolves to."""
    from hooklab.grading.integrity import syntax

    given = "shapes = leaf_output_shapes(net, x)\n"
    assert syntax.code(given) == syntax.code("shapes = leaf_output_shapes(net, x)  # the same, commented\n")
    assert syntax.code("shapes = [leaf_output_shapes(net, x), run()][0]\n") != syntax.code(
        "shapes = leaf_output_shapes(net, x)\n")
