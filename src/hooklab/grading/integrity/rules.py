"""What the scan holds and what it lets through: the techniques by module, attribute, call and magic, what one
assignment may use, and what reaching a dotted path does."""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from hooklab.grading.kernels.protocol import PROBE_MODULE

# Modules whose only use in a submission is to reach the interpreter's machinery.
FORBIDDEN_MODULES = {
    "ctypes": "reaches memory directly (ctypes)",
    "_ctypes": "reaches memory directly (ctypes)",
    "cffi": "reaches memory directly (cffi)",
    "gc": "searches the interpreter's objects (gc)",
    "importlib": "uses the import system (importlib)",
    "imp": "uses the import system (imp)",
    "builtins": "changes the builtins",
    "marshal": "loads code objects (marshal)",
    "pickle": "runs code hidden in data (pickle)",
    "_pickle": "runs code hidden in data (pickle)",
    "dill": "runs code hidden in data (dill)",
    "cloudpickle": "runs code hidden in data (cloudpickle)",
    "shelve": "runs code hidden in data (shelve)",
    "copyreg": "runs code hidden in data (copyreg)",
    "code": "runs code from strings (code)",
    "codeop": "runs code from strings (codeop)",
    "runpy": "runs code from files (runpy)",
    "IPython": "reaches IPython's machinery",
    "ipykernel": "reaches the kernel's machinery",
    "traitlets": "reaches IPython's configuration",
    "jupyter_client": "reaches the kernel's machinery",
    "zmq": "reaches the kernel's machinery",
    "threading": "runs code outside its cell (threads)",
    "_thread": "runs code outside its cell (threads)",
    "concurrent": "runs code outside its cell (threads)",
    "multiprocessing": "runs code outside its cell (processes)",
    "subprocess": "runs code outside its cell (processes)",
    "pty": "runs code outside its cell (processes)",
    "asyncio": "runs code outside its cell (event loop)",
    "signal": "runs code outside its cell (signal handlers)",
    "atexit": "runs code outside its cell (exit handlers)",
    "sched": "runs code outside its cell (scheduler)",
    "unittest": "patches objects (unittest.mock)",
    "mock": "patches objects (mock)",
    "site": "changes the import path (site)",
    "sitecustomize": "changes the import path (site)",
    "hooklab.grading": "reaches the grader",
    "hooklab.observations": "reaches the grader's observations",
    "hooklab.checks.observations": "reaches the grader's observations",  # the module, as the checkers hold it
    "torch._C": "reaches torch's internals (torch._C)",
    "torch.overrides": "intercepts torch functions (torch.overrides)",
    "torch.utils._python_dispatch": "intercepts torch operators (dispatch modes)",
    "torch.jit": "runs TorchScript (torch.jit), which no watch sees into",
    "torch.futures": "runs code outside its cell (torch.futures)",
    "pydoc": "runs shell commands (pydoc's pagers)",
    "pkgutil": "uses the import system (pkgutil)",
    "socket": "reaches the kernel's connections (socket)",
    "doctest": "runs code from strings (doctest)",
    "pdb": "starts a debugger (pdb)",
    "bdb": "starts a debugger (bdb)",
    "trace": "traces code (trace)",
    "cProfile.run": "runs code from a string (cProfile.run)",
    "cProfile.Profile": "runs code from a string (cProfile.Profile)",
    "profile.Profile": "runs code from a string (profile.Profile)",
    **{f"timeit.{name}": "runs code from a string (timeit; time a line with %timeit)"
       for name in ("timeit", "repeat", "Timer", "main")},
    "torch.utils.benchmark": "runs code from a string (torch.utils.benchmark; time a line with %timeit)",
    "torch.hub": "loads code from a folder or a repository (torch.hub)",
    # the frames of the stack, or their locals as text: the grader's agent runs below every cell
    **{f"traceback.{name}": "walks the call stack (traceback)"
       for name in ("walk_stack", "walk_tb", "extract_stack", "extract_tb", "format_stack", "print_stack",
                    "StackSummary", "FrameSummary", "TracebackException")},
    "logging.config": "imports objects by their names (logging.config)",
    "typing.ForwardRef": "runs code from strings (typing.ForwardRef)",
    "cProfile.runctx": "runs code from a string (cProfile.runctx)",
    "profile.run": "runs code from a string (profile.run)",
    "profile.runctx": "runs code from a string (profile.runctx)",
    "typing.get_type_hints": "runs code from strings (annotations evaluated by typing.get_type_hints)",
    "joblib": "runs code outside its cell (joblib)",
    "dask": "runs code outside its cell (dask)",
    "distributed": "runs code outside its cell (dask.distributed)",
    "torch.distributed.rpc": "runs code outside its cell (torch.distributed.rpc)",
    "torch.serialization": "runs code hidden in data (torch.serialization: what torch.load may unpickle)",
    "torch.package": "runs code hidden in data (torch.package)",
    # native code compiled from a string runs where no watch of the kernel's sees
    "torch.utils.cpp_extension": "compiles native code (torch.utils.cpp_extension)",
    "numpy.f2py": "compiles native code (numpy.f2py)",
    # a field name reaches attributes and items as getattr does ("0.__globals__"), the object handed back
    "string.Formatter": "reaches attributes by field names (string.Formatter)",
}
# torch.load unpickles, running code hidden in the data, when given ``weights_only`` other than a written True, a
# ``pickle_module`` (also as its third positional argument) or keywords it cannot read (``**options``): its default,
# weights only in the pack's torch (2.12+), follows TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD, which an answer cannot set (ENV:
# writes to the process environment are held). numpy's loaders unpickle with ``allow_pickle=True``. Passed as a value,
# torch.load is held as attrgetter is.
PICKLE_LOADER = "torch.load"
# The process environment is state that torch and the libraries the checkers use read
# (TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD, OMP/MKL settings, ...), and a test can run answer code again that reads what an
# earlier run stored there: an answer reads it (``os.environ.get``, ``os.environ[key]``, ENV_READS) and never writes it
# (an item set or deleted, any other method, ``os.putenv``/``unsetenv``, ``%env`` with a value, ``%set_env``), nor
# hands os.environ to code the scan does not read. ALLOWED may let one constant write through, written
# ``os.environ.<KEY>=<value>`` (10's given cell sets GLOO_SOCKET_IFNAME to "lo").
ENVIRON = frozenset({"os.environ", "os.environb"})
ENV_READS = frozenset({"get", "copy", "keys", "values", "items", "__contains__", "__getitem__", "__len__", "__iter__"})
ENV_WRITE = "changes the process environment (os.environ), which torch and the checkers' libraries read"
# ``operator.methodcaller(name, ...)(obj)`` is ``obj.name(...)``: the checker reads its name as it reads an attribute's
# (no attribute of FORBIDDEN_ATTRIBUTES or SPECIAL_METHODS, no hidden dunder in a computed one) and holds it passed as
# a value; a module it is applied to is handed around, which the scan holds.
METHODCALLER = "operator.methodcaller"
# The functional spellings of a getattr loop, read as ``getattr(obj, name)`` is: ``operator.attrgetter(name, ...)(obj)``
# (a dotted name is a chain of getattr), ``functools.reduce(getattr, names, obj)`` and ``map(getattr, objs, names)``.
# A name spelled as a dangerous attribute, written or built (a "__" in a piece), is held, and so is any of them that
# reaches an object the notebook imported (a module, the checkers) or is given names it cannot read (``*names``);
# attrgetter and getattr passed on otherwise stay held (the names they are given go unread). On an answer's own objects
# (a model, its submodules) they reach what a getattr loop reaches, which the run-time probe watches.
ATTRGETTER = "operator.attrgetter"
REDUCE = "functools.reduce"

# os functions that start processes: a forked child computes where no watch of the kernel's sees it.
OS_PROCESSES = ("fork", "spawn", "exec", "system", "popen", "posix_spawn", "register_at_fork")
# os functions that work on file descriptors: the kernel's connections to the grader are among them.
OS_DESCRIPTORS = {"dup", "dup2", "close", "closerange", "open", "openpty", "write", "writev", "pwrite", "fdopen",
                  "pipe", "pipe2", "set_inheritable", "set_blocking", "sendfile", "ftruncate", "read", "readv", "pread",
                  "lseek"}
# What a student may take of inspect: a callable's signature and source, what kind of object something is. The rest
# reads frames, closures, globals and members (inspect.getclosurevars, getmembers) or finds modules (getmodule).
INSPECT_ALLOWED = {"signature", "Signature", "Parameter", "getsource", "getsourcelines", "getdoc", "cleandoc", "getmro",
                   "getfullargspec", "isclass", "isfunction", "ismethod", "isbuiltin", "isroutine", "ismodule",
                   "isgeneratorfunction", "iscoroutinefunction", "isabstract", "isgenerator"}

# Keyword arguments that only code working on the interpreter's stack or on file descriptors passes.
FORBIDDEN_KEYWORDS = {
    "capture_locals": "reads the locals of the call stack (capture_locals)",
    "closefd": "writes or reads a file descriptor (closefd), the kernel's connections among them",
}
# Builtins and modules' functions that open a file, or a file descriptor when given a number.
OPENERS = {"open", "io.open", "io.FileIO", "_io.open", "_io.FileIO", "codecs.open"}
# The process's own files that reach its connections or its memory: its descriptors, its sockets, its memory (a path
# of /proc built at run time starts with "/proc/" alone, or a process's number).
PROCESS_FILES = re.compile(r"^(/proc/?$|/proc/\d|/proc/(self|thread-self)/(fd|fdinfo|mem|net|task)|/proc/net|/dev/fd)")

# Attribute names that lead to functions' internals, frames or the object graph.
FORBIDDEN_ATTRIBUTES = {
    "__globals__": "reads a function's globals",
    "__code__": "reads or replaces a function's code",
    "__closure__": "reads a function's closure",
    "cell_contents": "reads or changes a closure's variables (cell_contents)",
    "__defaults__": "changes a function's default arguments",
    "__kwdefaults__": "changes a function's default arguments",
    "__builtins__": "reaches the builtins",
    "__subclasses__": "searches classes (__subclasses__)",
    "__self__": "reaches the object behind a method (__self__: the builtins module behind a builtin)",
    "__import__": "uses the import system (__import__)",
    "__loader__": "uses the import system (__loader__)",
    "__spec__": "uses the import system (__spec__)",
    "__setattr__": "sets attributes around the normal rules (__setattr__)",
    "__delattr__": "deletes attributes around the normal rules (__delattr__)",
    "__getattribute__": "reads attributes around the normal rules (__getattribute__)",
    "__setstate__": "sets an object's attributes around the normal rules (__setstate__)",
    # annotations are evaluated later as code (inspect.signature(f, eval_str=True), singledispatch's register): written
    # in the code they are read as code; set by hand they can be built at run time
    "__annotations__": "sets annotations that code evaluates later (__annotations__)",
    # kernels of its own for torch's operators, run by torch's Python dispatcher inside every use of them
    "py_impl": "gives torch's operators kernels of its own (OpOverload.py_impl)",
    "py_kernels": "gives torch's operators kernels of its own (OpOverload.py_kernels)",
    "enable_python_dispatcher": "switches on torch's Python dispatcher (the kernels py_impl gives operators)",
    "f_back": "walks the call stack (frames)",
    "f_globals": "reads a frame's globals",
    "f_locals": "reads a frame's locals",
    "f_builtins": "reads a frame's builtins",
    "f_code": "reads a frame's code",
    "f_trace": "traces a frame",
    "tb_frame": "walks the call stack (traceback frames)",
    "tb_next": "walks the call stack (traceback frames)",
    "gi_frame": "reads a generator's frame",
    "cr_frame": "reads a coroutine's frame",
    "ag_frame": "reads a generator's frame",
    # a code object can be made into a function of any name ("<module>", a cell's) and globals
    "gi_code": "reads a generator's code",
    "cr_code": "reads a coroutine's code",
    "ag_code": "reads a generator's code",
}

# The packages an answer may import: those the notebooks use and the standard library's plain tools. Any other is
# held: a library can run code it is given as a string (a template engine, a YAML loader, an expression parser), which
# the scan does not read; FORBIDDEN_MODULES and the rules below still hold parts of these.
IMPORTABLE = frozenset({
    "abc", "array", "bisect", "builtins", "collections", "contextlib", "copy", "dataclasses", "datetime", "decimal",
    "enum", "faulthandler", "fractions", "functools", "__future__", "gc", "hashlib", "heapq", "hooklab", "importlib",
    "inspect", "io", "ipywidgets", "itertools", "json", "linecache", "logging", "math", "matplotlib",
    "matplotlib_inline", "numbers", "numpy", "_operator", "operator", "os", "pathlib", "pprint", "queue", "random",
    "re", "scipy", "secrets", "sklearn", "statistics", "string", "struct", "sys", "tempfile", "textwrap", "time",
    "timeit", "torch", "tqdm", "traceback", "types", "typing", "typing_extensions", "warnings", "weakref",
})

# What runs a callback when an object is freed (after a checker has returned, outside every watch, as __del__): its
# second argument, or its ``callback=``. A container's method that forgets an entry (``weakref.finalize(tensor,
# cache.pop, key, None)``, as notebook 07 does) runs no code of the answer's; any other callback is held.
WEAKREF_CALLBACKS = ("weakref.finalize", "weakref.ref", "weakref.proxy", "weakref.WeakMethod", "weakref.ReferenceType")
FORGETTING_METHODS = frozenset({"pop", "discard", "remove"})

# Methods of a dict that change it: called on an object's namespace (``model.__dict__.update(...)``), they set its
# attributes around the normal rules.
DICT_WRITES = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__", "__ior__"})

FORBIDDEN_CALLS = {
    "exec": "runs code from a string (exec)",
    "eval": "runs code from a string (eval)",
    "compile": "compiles code from a string (compile)",
    "__import__": "uses the import system (__import__)",
    "breakpoint": "starts a debugger (breakpoint)",
    "globals": "reaches the notebook's namespace (globals())",
    "locals": "reaches the notebook's namespace (locals())",
    "get_ipython": "reaches IPython's machinery (get_ipython)",
}

# IPython's input history holds the source of the test cells that ran.
HISTORY_NAMES = re.compile(r"^(In|Out|_ih|_oh|_dh|_i+|_i\d+|_\d+|__IPYTHON__)$")

SYS_READABLE = {
    "stdout", "stderr", "stdin", "version", "version_info", "float_info", "int_info", "maxsize",
    "platform", "byteorder", "getsizeof", "getrecursionlimit", "executable", "argv",
    "implementation", "hexversion", "exc_info", "exception", "getdefaultencoding",
    "getfilesystemencoding", "path", "float_repr_style",
    "setrecursionlimit",  # a deep recursive walk of a graph; too deep a recursion only crashes the student's own kernel
}
INSPECT_FRAMES = {"currentframe", "stack", "trace", "getouterframes", "getinnerframes", "getframeinfo"}
TORCH_LIBRARY_ALLOWED = {"custom_op", "register_fake", "register_autograd", "register_kernel", "opcheck", "triton_op",
                         "define", "impl", "register_vmap", "register_torch_dispatch", "Library"}
# torch.library's functions that define an operator or give one a kernel, a fake, a backward or a vmap rule: for an
# operator of the answer's own (a custom_op it made, named or by a "namespace::name" of its own), never for one of
# torch's, which the tests run
TORCH_LIBRARY_REGISTERS = {"register_fake", "register_autograd", "register_kernel", "define", "impl", "register_vmap",
                           "register_torch_dispatch"}
TORCH_LIBRARY_MAKERS = {"custom_op", "triton_op"}  # torch.library's functions that make an operator of a given name
TORCH_LIBRARY_CLASS = "Library"  # a library of operators and kernels for one namespace: one of the answer's own
TORCH_NAMESPACES = frozenset({  # torch's own operator namespaces
    "aten", "prims", "prim", "quantized", "_quantized", "quantized_decomposed", "c10d", "_c10d_functional",
    "_c10d_functional_autograd", "_dtensor", "profiler", "mkldnn", "onednn", "mkl", "xnnpack", "inductor",
    "higher_order", "rngprims", "debugprims", "_inductor_test", "_test", "torchvision", "fbgemm",
})
# IPython magics that only time, capture, install or display; others (%run, %load, %config,
# %history, ...) run unseen code, change IPython or print the test cells.
SAFE_MAGICS = {
    "time", "timeit", "matplotlib", "capture", "pip", "who", "whos", "who_ls", "precision", "pprint",
    "writefile", "prun", "pwd", "ls", "env", "pinfo", "pinfo2", "psearch", "pdoc", "pdef", "psource",
}
CODE_MAGICS = {"time", "timeit", "capture", "prun"}  # magics whose argument or body is Python code to check
# Methods no class of an answer may have: they run the class's code where the tests do not look.
SPECIAL_METHODS = {
    "__torch_function__": "overrides torch functions for its tensors (__torch_function__)",
    "__torch_dispatch__": "overrides torch operators for its tensors (__torch_dispatch__)",
    "__del__": "runs code outside its cell (__del__)",
    "_render_traceback_": "changes how IPython shows an error (_render_traceback_)",
    # a metaclass's namespace for a class body: the body's names (getattr, print, the checkers) are read from it
    "__prepare__": "makes a class body read its names from a mapping of its own (__prepare__)",
}
# What the checks read of a tensor: a tensor subclass that redefines one can report what it is not.
TENSOR_READS = {
    "__eq__", "__ne__", "__bool__", "__float__", "__index__", "__int__", "__len__", "__iter__", "__getitem__",
    "tolist", "item", "allclose", "equal", "dtype", "shape", "size", "dim", "ndim", "numel", "device", "layout",
    "requires_grad", "grad", "grad_fn", "is_leaf", "data", "is_floating_point", "element_size", "itemsize", "nbytes",
    "untyped_storage", "storage", "stride", "is_contiguous", "detach", "clone", "to", "cpu", "double", "float",
}

# Functions that only show or compare what they are given: a module passed to one is not handed on.
SHOWN_ONLY = {"print", "repr", "str", "help", "dir", "id", "type", "isinstance", "hash", "len"}

# Modules other modules hold as attributes (``logging.threading``, ``torch.nn.functional.torch``): reached through
# them, they are still themselves. OWN_SUBMODULES: a package's own submodule of one of those names.
REEXPORTED = {name.split(".")[0] for name in FORBIDDEN_MODULES} | {"os", "sys", "inspect", "types", "torch",
                                                                   "operator", "functools"}
OWN_SUBMODULES = {"torch.signal", "scipy.signal", "torch.types", "numpy.typing", "torch.distributed"}
# modules whose private names are the plain way to end or crash a process (os._exit, faulthandler._sigsegv): a
# submission that does so is graded as one whose kernel stopped, not held
PRIVATE_ALLOWED = {"os", "faulthandler"}
TORCH_PRIVATE_ALLOWED = {"_dynamo", "_logging"}  # private modules of torch's that the notebooks themselves use
# Private modules of torch's and the names a student may use of them: torch.utils._pytree's functions walk nested
# containers (a mode's args and outputs) and call only the function given; its registries (register_pytree_node,
# SUPPORTED_NODES), its key paths (key_get: attributes by name) and the modules it imports stay held.
TORCH_PRIVATE_NAMES = {
    "torch.utils._pytree": frozenset({
        "tree_map", "tree_map_", "tree_map_only", "tree_map_only_", "tree_map_with_path", "tree_flatten",
        "tree_flatten_with_path", "tree_unflatten", "tree_leaves", "tree_leaves_with_path", "tree_structure",
        "tree_iter", "tree_all", "tree_any", "tree_all_only", "tree_any_only", "tree_is_leaf", "arg_tree_leaves",
        "map_only", "keystr", "treespec_pprint", "TreeSpec", "LeafSpec", "PyTree"}),
}
# Modules whose attributes an answer may fetch by a computed name, ``getattr(nn.init, f"{kind}_")``, when the result is
# called at once or the name ends in a written "_": torch.nn.init holds functions, typing's helpers, the class Tensor
# and three modules (math, torch, warnings), which fail when called; its names ending in "_" are all functions.
CALLED_BY_NAME = frozenset({"torch.nn.init"})
# Builtins and classes whose result is a plain container, never callable: one stored as a model's reading method
# (``self.modules = list(...)`` on a recorder) cannot stand in for it (calling it fails).
CONTAINERS = frozenset({"list", "tuple", "dict", "set", "frozenset", "sorted"})
# Builtins whose use the scan lets through only as themselves: the containers, and locals() and vars() in a function
# (a snapshot of its own variables). The checker is given those the student's code never rebinds.
KEPT_BUILTINS = CONTAINERS | {"locals", "vars"}
# Builtins the functional lookups (ATTRGETTER, REDUCE) are read with only as themselves: map, and getattr given to it or
# to reduce. The checker is given those the student's code never rebinds, beside KEPT_BUILTINS.
LOOKUP_BUILTINS = frozenset({"map", "getattr"})
CONTAINER_CLASSES = frozenset({"collections.OrderedDict", "collections.defaultdict", "collections.deque",
                               "collections.Counter"})

# nn.Module's methods that tests read a model through: one set on a model object (``model.named_parameters = …``)
# would show the tests parts the model does not have.
MODULE_READS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
                          "modules", "named_modules", "state_dict", "get_parameter", "get_buffer", "get_submodule"})

# What one assignment teaches and so may use, though the scan holds it everywhere else. Notebook 09 teaches torch's
# modes: its answers subclass TorchFunctionMode and TorchDispatchMode, define __torch_function__ and
# __torch_dispatch__ on those subclasses, and enter them with ``with`` inside the answer's function. Only these exact
# names are let through (torch.utils._python_dispatch's other, private names, torch._C and the rest stay held), and
# each mode's own handler only in a class whose bases are that mode alone (a tensor subclass defining them is held).
# A mode that is left entered is caught as it runs: the runtime probe (kernel_probe) records how many modes are
# entered, around every test cell, and a checker reading a value while a mode is entered observes only that
# (hooklab.observations.encode), so it cannot change what the grader sees.
MODE_HANDLERS = {  # a mode class → the method its subclasses define
    "torch.overrides.TorchFunctionMode": "__torch_function__",
    "torch.utils._python_dispatch.TorchDispatchMode": "__torch_dispatch__",
}
# ``_push_mode(mode)`` is what entering a dispatch mode does, ``_pop_mode()`` what leaving it does (as the mode's public
# ``__exit__``, it pops the mode on top): a mode of hooklab's that were popped notes it (check_no_model_run), and no
# checker reads a value while a dispatch mode is entered.
MODES = frozenset({"torch.overrides", "torch.overrides.resolve_name", "torch.utils._python_dispatch",
                   "torch.utils._python_dispatch._push_mode", "torch.utils._python_dispatch._pop_mode", *MODE_HANDLERS})
# Notebook 10 counts FLOPs on fake tensors: its answers may enter torch._subclasses' FakeTensorMode (a mode whose
# tensors have no storage: it computes shapes only) and test for FakeTensor, nothing else of that private package;
# and it shows a TorchFunctionMode beside tensor subclasses, as 09 teaches them.
FAKE_TENSORS = frozenset({"torch._subclasses", "torch._subclasses.FakeTensorMode", "torch._subclasses.fake_tensor",
                          "torch._subclasses.fake_tensor.FakeTensorMode", "torch._subclasses.fake_tensor.FakeTensor"})
# Classes held with their module that an annotation may name (``def hook(state, bucket) -> torch.futures.Future:``, as
# 10's DDP communication hook is documented). An annotation is evaluated where it is written and kept: code reads it
# back as a value (``inspect.signature(f).return_annotation``, ``f.__annotations__``), so only a class whose value
# does nothing the tests could see is let through, never a module or a function (``-> os.system``, ``-> sys.modules``).
# torch.futures.Future is torch.Future (public, not held) with Python wrappers: a future made by hand runs its
# callbacks only when the code that holds it sets its result, in that cell; collect_all and wait_all stay held.
ANNOTATION_TYPES = frozenset({"torch.futures.Future"})
# assignment → the dotted names its answers may use
# 09 prints whether TorchFunctionMode is in ``torch.overrides.__all__`` (a list of names: reading it does nothing);
# 10's given cell sets GLOO_SOCKET_IFNAME to "lo" (gloo's network interface, for its one-process group), which an answer
# copying it may do too.
ALLOWED = {"09_below_the_module": MODES | {"torch.overrides.__all__"},
           "10_hooks_inside_pytorch": MODES | FAKE_TENSORS | {"os.environ.GLOO_SOCKET_IFNAME=lo"}}


def allowed_for(assignment: str) -> frozenset[str]:
    """The dotted names an assignment's answers may use that the scan holds elsewhere (:data:`ALLOWED`)."""
    return ALLOWED.get(assignment, frozenset())


def _package_modules(package: str) -> frozenset[str]:
    """The dotted names of a package's modules, from its files (nothing is imported)."""
    root = Path(importlib.util.find_spec(package).origin).parent
    names = {package}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        names.add(".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts))))
    return frozenset(names)


# hooklab's modules: a student's code names what it uses of them (hooklab.checks.check_tensor), never hands a module
# around (``[checks][0]``, ``(lambda m: m)(checks)``), where the scan would lose what it is.
HOOKLAB_MODULES = _package_modules("hooklab")
GRADER_MODULES = (PROBE_MODULE, "hooklab.grading")  # a string that names one starts a way to reach the grader
IMPORT_MODULE = ("importlib", "import_module")  # the one use of importlib a student may make, with a constant name


@cache
def installed(module: str) -> bool:
    """Whether a top-level module is part of the grading environment (not a file of the submission)."""
    if module in sys.stdlib_module_names or module in sys.builtin_module_names:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@cache
def is_module(dotted: str) -> bool:
    """Whether a dotted path names a module of the grading environment, found without importing it."""
    parts = dotted.split(".")
    if parts[0] in sys.builtin_module_names:
        return len(parts) == 1
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return False
    for position, part in enumerate(parts[1:], start=1):
        if spec is None:
            return False
        if not spec.submodule_search_locations:  # a plain module: a module it imports under a name of its own
            alias = _module_aliases(spec.name, spec.origin).get(part)
            return alias is not None and is_module(".".join([alias, *parts[position + 1:]]))
        if part in _rebound(spec.name, spec.origin):
            return False
        spec = importlib.machinery.PathFinder.find_spec(f"{spec.name}.{part}", spec.submodule_search_locations)
    return spec is not None


@cache
def _source_tree(origin: str | None) -> ast.Module:
    """The syntax tree of an installed module's file (an empty one where it has no readable Python source)."""
    try:
        return ast.parse(Path(origin).read_text()) if origin else ast.Module(body=[])
    except (OSError, SyntaxError, ValueError):
        return ast.Module(body=[])


@cache
def _module_aliases(module: str, origin: str | None) -> dict[str, str]:
    """The names a plain module binds to what it imports (``torch.nn.modules.activation.F`` is
    torch.nn.functional): name → the dotted path imported."""
    aliases = {}
    for node in ast.walk(_source_tree(origin)):
        if isinstance(node, ast.Import):
            aliases.update({a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                            for a in node.names})
        elif isinstance(node, ast.ImportFrom):
            base = module.rsplit(".", node.level)[0] if node.level else ""
            source = ".".join(part for part in (base, node.module) if part)
            aliases.update({a.asname or a.name: f"{source}.{a.name}" for a in node.names})
    return aliases


@cache
def _rebound(package: str, init: str | None) -> frozenset[str]:
    """The names a package's ``__init__`` binds to something of its own, hiding a submodule of that name
    (``torch.autograd.gradcheck`` is a function, from the module ``gradcheck``)."""
    names = set()
    for node in ast.walk(_source_tree(init)):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom) and (node.module or "") not in ("", package):  # not its own submodule
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return frozenset(names)


def reached(dotted: str) -> Iterator[str]:
    """The dotted paths an attribute chain reaches: its own, and the path from each module it passes through that
    another module re-exports (``logging.threading.Thread`` is threading.Thread, ``F.torch._C`` is torch._C), also
    under a private alias (``collections._sys.modules`` is sys.modules)."""
    yield dotted
    parts = dotted.split(".")
    for position in range(1, len(parts)):
        name = parts[position].removeprefix("_")  # collections._sys, typing._sys: sys under a private alias
        if name in REEXPORTED and ".".join(parts[:position + 1]) not in OWN_SUBMODULES:
            yield ".".join([name, *parts[position + 1:]])


def technique(dotted: str) -> str | None:
    """What reaching this dotted path does, when it is one of the techniques; None for ordinary code."""
    for prefix, technique in FORBIDDEN_MODULES.items():
        if dotted == prefix or dotted.startswith(prefix + "."):
            return technique
    parts = dotted.split(".")
    if parts[0] not in IMPORTABLE:
        return f"imports {parts[0]}, which no exercise needs (code a library runs from a string goes unread)"
    if len(parts) < 2:
        return None
    private = next((position for position, part in enumerate(parts) if position and _private(part)), None)
    if parts[0] == "torch" and private is not None:
        module = ".".join(parts[:private + 1])
        if dotted == module and module in TORCH_PRIVATE_NAMES or (
                len(parts) == private + 2 and parts[-1] in TORCH_PRIVATE_NAMES.get(module, ())):
            return None
        return f"reaches torch's internals ({module})"
    if dotted.startswith("torch.library.") and parts[2] not in TORCH_LIBRARY_ALLOWED:
        return "registers operator kernels (torch.library)"
    if parts[0] == "inspect" and parts[1] in INSPECT_FRAMES:
        return "walks the call stack (inspect)"
    if parts[0] == "inspect" and parts[1] not in INSPECT_ALLOWED:
        return f"reads objects' internals (inspect.{parts[1]})"
    if parts[0] == "os" and parts[1] in OS_DESCRIPTORS:
        return f"handles file descriptors (os.{parts[1]}), the kernel's connections among them"
    if parts[0] == "hooklab" and any(part.startswith("_") for part in parts[1:]):
        return f"reaches hooklab's internals ({dotted})"
    if parts[0] == "sys" and parts[1] not in SYS_READABLE:
        return f"uses the interpreter's machinery (sys.{parts[1]})"
    if parts[0] in {"os", "posix"} and parts[1] in {"putenv", "unsetenv"}:
        return ENV_WRITE
    if ".".join(parts[:2]) in ENVIRON and len(parts) > 2 and parts[2] not in ENV_READS:
        return ENV_WRITE
    if parts[0] == "os" and parts[1].startswith(OS_PROCESSES):
        return f"runs code outside its cell (processes: os.{parts[1]})"
    if parts[0] == "types" and parts[1] in {"FunctionType", "CodeType", "ModuleType", "CellType", "LambdaType"}:
        return f"builds code or modules by hand (types.{parts[1]})"
    if private is not None and parts[0] not in PRIVATE_ALLOWED:  # dataclasses._create_fn: code from strings, and more
        return f"reaches a module's internals ({'.'.join(parts[:private + 1])})"
    return None


def _private(name: str) -> bool:
    """A private name of torch's that no notebook needs (they use torch._dynamo, torch._logging, torch._foreach_*)."""
    return (name.startswith("_") and not name.startswith("__") and name not in TORCH_PRIVATE_ALLOWED
            and not name.startswith("_foreach_"))
