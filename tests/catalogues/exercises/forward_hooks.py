"""02_forward_hooks: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

import inspect

from catalogues.honest_answers import FORWARD_HOOKS, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong


def _options_written_out(config: dict) -> bool:
    """Some registration states an option as False."""
    return any(hook.get(key, None) is False for hook in config["hooks"] for key in ("prepend", "always_call"))


def _registered_twice(config: dict) -> bool:
    """Two registrations alike (one hook registered twice on one module)."""
    hooks = config["hooks"]
    return any(hooks[i] == hooks[j] for i in range(len(hooks)) for j in range(i))


SPACE: dict[str, list[Dimension]] = {
    "collect_hooks": [
        Dimension("inputs of one element", lambda c: c.target == "pre_hook" and c.args[1][0].numel() == 1),
        Dimension("inputs of two dimensions", lambda c: c.target == "pre_hook" and c.args[1][0].dim() == 2),
        Dimension("inputs that require grad", lambda c: c.target == "pre_hook" and c.args[1][0].requires_grad),
        Dimension("the pre-hook alone on the module",
                  lambda c: c.target == "pre_hook" and not c.args[0]._forward_hooks),
        Dimension("the hook alone on the module",
                  lambda c: c.target == "hook" and not c.args[0]._forward_pre_hooks),
        Dimension("answer holding items before the call",
                  reading="collect_hooks_test's hidden call on an answer that already holds an item: the hooks append "
                          "after it (answer is a global, no call shows it)"),
        Dimension("a second call of the same module",
                  reading="collect_hooks_test's hidden second call of one Add: answer holds both calls' tensors"),
    ],
    "change_hooks": [
        Dimension("one input", lambda c: c.target == "double_inputs" and len(c.args[1]) == 1),
        Dimension("four inputs", lambda c: c.target == "double_inputs" and len(c.args[1]) == 4),
        Dimension("inputs of different shapes that broadcast",
                  lambda c: c.target == "double_inputs" and len({tuple(x.shape) for x in c.args[1]}) > 1),
        Dimension("integer tensors", lambda c: c.target == "double_inputs"
                  and all(not x.is_floating_point() for x in c.args[1])),
        Dimension("inputs that require grad",
                  lambda c: c.target == "double_inputs" and all(x.requires_grad for x in c.args[1])),
        Dimension("an output that requires grad", lambda c: c.target == "plus_five" and c.args[2].requires_grad),
        Dimension("an integer output", lambda c: c.target == "plus_five" and not c.args[2].is_floating_point()),
    ],
    "kwargs_hook": [
        Dimension("a negative scale", lambda c: c.target == "cap_scale" and c.args[2].get("scale", 0) < 0),
        Dimension("a scale of zero", lambda c: c.target == "cap_scale" and c.args[2].get("scale", 1) == 0),
        Dimension("a scale of exactly 1", lambda c: c.target == "cap_scale" and c.args[2].get("scale") == 1),
        Dimension("an int scale above 1",
                  lambda c: c.target == "cap_scale" and type(c.args[2].get("scale")) is int and c.args[2]["scale"] > 1),
        Dimension("no scale", lambda c: c.target == "cap_scale" and "scale" not in c.args[2]),
        Dimension("another keyword argument beside scale",
                  lambda c: c.target == "cap_scale" and "scale" in c.args[2] and len(c.args[2]) > 1),
        Dimension("the inputs passed by keyword", lambda c: c.target == "cap_scale" and not c.args[1]),
        Dimension("a module whose default scale is above 1, called without scale", lambda c: c.target == "cap_scale"
                  and "scale" not in c.args[2]
                  and inspect.signature(c.args[0].forward).parameters["scale"].default > 1),
        Dimension("a module whose default scale is below 1, called without scale", lambda c: c.target == "cap_scale"
                  and "scale" not in c.args[2]
                  and inspect.signature(c.args[0].forward).parameters["scale"].default < 1),
    ],
    "leaf_shapes": [
        Dimension("the model itself a leaf",
                  lambda c: c.target == "leaf_output_shapes" and not list(c.args[0].children())),
        Dimension("a leaf called twice (one module under two names)", lambda c: c.target == "leaf_output_shapes"
                  and len(list(c.args[0].named_modules(remove_duplicate=False)))
                  > len(list(c.args[0].named_modules()))),
        Dimension("a container that runs its children in reverse", lambda c: c.target == "leaf_output_shapes"
                  and any(type(m).__name__ == "Reversed" for m in c.args[0].modules())),
        Dimension("containers nested three deep", lambda c: c.target == "leaf_output_shapes"
                  and max(name.count(".") for name, _ in c.args[0].named_modules()) >= 3),
        Dimension("a batch of 1", lambda c: c.target == "leaf_output_shapes" and len(c.args[1]) == 1),
        Dimension("a model holding a forward hook of its own already", lambda c: c.target == "leaf_output_shapes"
                  and any(m._forward_hooks for m in c.args[0].modules())),
        Dimension("a model whose forward raises an Exception or KeyboardInterrupt",
                  reading="leaf_shapes_test's Broken and Interrupted models: no hook left after the call raised"),
        Dimension("a call right after one in which model(x) raised",
                  lambda c: c.target == "leaf_output_shapes" and c.after_raise),
    ],
    "capture": [
        Dimension("the name '' (the model itself)", lambda c: c.target == "capture" and "" in c.args[1]),
        Dimension("a name two levels deep", lambda c: c.target == "capture" and any("." in name for name in c.args[1])),
        Dimension("one name", lambda c: c.target == "capture" and len(c.args[1]) == 1),
        Dimension("an unknown name after a known one", lambda c: c.target == "capture" and len(c.args[1]) > 1
                  and c.args[1][0] in dict(c.args[0].named_modules())
                  and any(name not in dict(c.args[0].named_modules()) for name in c.args[1])),
        Dimension("a model holding a forward hook of its own already",
                  lambda c: c.target == "capture" and any(m._forward_hooks for m in c.args[0].modules())),
        Dimension("the dict read inside the block",
                  reading="capture_test's hidden check of the dict inside the with block, after a call"),
        Dimension("a block that raises ValueError or KeyboardInterrupt",
                  reading="capture_test's blocks that raise: no hook left after them"),
    ],
    "patch_activation": [
        Dimension("a layer of a Sequential",
                  lambda c: c.target == "patch" and type(c.args[0]).__name__ == "Sequential"),
        Dimension("the block of a skip connection", lambda c: c.target == "patch"
                  and type(c.args[0]).__name__ == "SkipAround"),
        Dimension("the model's last layer", lambda c: c.target == "patch"
                  and c.args[1] is list(c.args[0].children())[-1]),
        Dimension("a batch of 1", lambda c: c.target == "patch" and len(c.args[2]) == 1),
        Dimension("a layer whose output depends on more than its input (its calls)",
                  lambda c: c.target == "patch" and type(c.args[1]).__name__ == "Counting"),
        Dimension("a layer holding a forward hook of its own already",
                  lambda c: c.target == "patch" and bool(c.args[1]._forward_hooks)),
        Dimension("a clean or corrupted run that raises",
                  reading="patch_activation_test's runs with an input of the wrong width: no hook left"),
        Dimension("a clean run stopped by KeyboardInterrupt", lambda c: c.target == "patch" and any(
            type(m).__name__ == "Interrupting" and m.at == 1 for m in c.args[0].modules())),
        Dimension("a corrupted run stopped by KeyboardInterrupt", lambda c: c.target == "patch" and any(
            type(m).__name__ == "Interrupting" and m.at == 2 for m in c.args[0].modules())),
    ],
    "predict_order": [
        Dimension("a child called twice", lambda c: c.target == "predict_order"
                  and any(c.args[0]["run"].count(child) > 1 for child in "ab")),
        Dimension("a child never called", lambda c: c.target == "predict_order" and len(set(c.args[0]["run"])) < 2),
        Dimension("outer raising", lambda c: c.target == "predict_order" and c.args[0]["raises"] == "outer"),
        Dimension("a child raising", lambda c: c.target == "predict_order" and c.args[0]["raises"] in ("a", "b")
                  and c.args[0]["raises"] in c.args[0]["run"]),
        Dimension("a module that would raise but is never called", lambda c: c.target == "predict_order"
                  and c.args[0]["raises"] in ("a", "b") and c.args[0]["raises"] not in c.args[0]["run"]),
        Dimension("two prepended hooks on one module and kind", lambda c: c.target == "hooks_in_order"
                  and sum(1 for hook in c.args[0]["hooks"] if hook["module"] == c.args[1] and hook["kind"] == c.args[2]
                          and hook.get("prepend")) > 1),
        Dimension("a prepended always_call hook in a module that raises", lambda c: c.target == "predict_order"
                  and any(hook["module"] == c.args[0]["raises"] and hook.get("prepend") and hook.get("always_call")
                          for hook in c.args[0]["hooks"])),
        Dimension("options written out as False",
                  lambda c: c.target == "predict_order" and _options_written_out(c.args[0])),
        Dimension("one hook registered twice", lambda c: c.target == "predict_order" and _registered_twice(c.args[0])),
        Dimension("no hooks", lambda c: c.target == "predict_order" and not c.args[0]["hooks"]),
    ],
}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
    return [
        # "one call add(x1, x2) leaves answer == [x1, x2, output]" read as "answer is then exactly that": the pre-hook
        # empties the list first
        Wrong("collect_hooks_pre_hook_starts_the_list_afresh", FORWARD_HOOKS, "collect_hooks", _cell('''
            def pre_hook(module, args):
                answer.clear()
                answer.extend(args)


            def hook(module, args, output):
                answer.append(output)
        '''), "answer after a call on a list that already held an item"),
        # the same, guarded instead: the inputs are appended only to an empty list
        Wrong("collect_hooks_pre_hook_appends_only_to_an_empty_list", FORWARD_HOOKS, "collect_hooks", _cell('''
            def pre_hook(module, args):
                if not answer:
                    answer.extend(args)


            def hook(module, args, output):
                answer.append(output)
        '''), "answer after a call on a list that already held an item"),
        # "[x1, x2, output]" read as positions: the output put at index 2
        Wrong("collect_hooks_puts_the_output_at_index_2", FORWARD_HOOKS, "collect_hooks", _cell('''
            def pre_hook(module, args):
                answer.extend(args)


            def hook(module, args, output):
                answer.insert(2, output)
        '''), "answer after a call on a list that already held an item"),
        # "2 * x" written with a float literal: integer inputs become float
        Wrong("change_hooks_double_with_a_float_literal", FORWARD_HOOKS, "change_hooks", _cell('''
            def double_inputs(module, args):
                return tuple(2.0 * x for x in args)


            def plus_five(module, args, output):
                return output + 5.0
        '''), "has dtype torch.float32, expected torch.int64"),
        # every input doubled at once, stacked: the inputs must then have one shape
        Wrong("change_hooks_stack_the_inputs", FORWARD_HOOKS, "change_hooks", _cell('''
            def double_inputs(module, args):
                return tuple(torch.stack(args) * 2)


            def plus_five(module, args, output):
                return output + 5
        '''), "raised RuntimeError: stack expects each tensor to be equal size"),
        # "return new tensors" read as "tensors of their own": detached, so no gradient reaches the caller's inputs
        Wrong("change_hooks_return_detached_tensors", FORWARD_HOOKS, "change_hooks", _cell('''
            def double_inputs(module, args):
                return tuple(2 * x.detach() for x in args)


            def plus_five(module, args, output):
                return output.detach() + 5
        '''), "output.requires_grad with both hooks"),
        # "cap" read as a bound on the size of scale: a scale below -1 is raised to -1
        Wrong("cap_scale_bounds_scale_on_both_sides", FORWARD_HOOKS, "kwargs_hook", _cell('''
            calls = []


            def cap_scale(module, args, kwargs):
                calls.append(dict(kwargs))
                if "scale" in kwargs:
                    return args, {**kwargs, "scale": max(-1.0, min(kwargs["scale"], 1.0))}
        '''), "with cap_scale has the wrong values"),
        # the positional inputs taken to be x1 and x2: a call that passes them by keyword goes wrong
        Wrong("cap_scale_unpacks_x1_and_x2", FORWARD_HOOKS, "kwargs_hook", _cell('''
            calls = []


            def cap_scale(module, args, kwargs):
                calls.append(dict(kwargs))
                if kwargs.get("scale", 0.0) > 1:
                    x1, x2 = args
                    return (x1, x2), {**kwargs, "scale": 1.0}
        '''), "raised ValueError: not enough values to unpack"),
        # requirement 4 read as "the default is capped too": the module's default is looked up and capped
        Wrong("cap_scale_caps_the_default_too", FORWARD_HOOKS, "kwargs_hook", _cell('''
            import inspect

            calls = []


            def cap_scale(module, args, kwargs):
                calls.append(dict(kwargs))
                default = inspect.signature(module.forward).parameters["scale"].default
                return args, {**kwargs, "scale": min(kwargs.get("scale", default), 1.0)}
        '''), "DoubleScaledAdd()(x1, x2, **{}) with cap_scale"),
        # "every leaf's output" read as every submodule's: the model itself is never a leaf
        Wrong("leaf_shapes_never_counts_the_model_itself", FORWARD_HOOKS, "leaf_shapes", _cell('''
            def leaf_output_shapes(model, x):
                records, handles = [], []

                def make_hook(name):
                    return lambda module, args, output: records.append((name, tuple(output.shape)))

                try:
                    for name, module in model.named_modules():
                        if name and next(module.children(), None) is None:
                            handles.append(module.register_forward_hook(make_hook(name)))
                    model(x)
                finally:
                    for handle in handles:
                        handle.remove()
                return records
        '''), "leaf_output_shapes on a model without submodules"),
        # the leaves found by walking the children: the model itself is never visited as a leaf
        Wrong("leaf_shapes_walks_the_children", FORWARD_HOOKS, "leaf_shapes", _cell('''
            def leaf_output_shapes(model, x):
                records, handles = [], []

                def walk(module, prefix):
                    for name, child in module.named_children():
                        qualified = f"{prefix}.{name}" if prefix else name
                        if next(child.children(), None) is None:
                            def record(m, args, output, qualified=qualified):
                                records.append((qualified, tuple(output.shape)))

                            handles.append(child.register_forward_hook(record))
                        else:
                            walk(child, qualified)

                try:
                    walk(model, "")
                    model(x)
                finally:
                    for handle in handles:
                        handle.remove()
                return records
        '''), "leaf_output_shapes on a model without submodules"),
        # requirement 4 ("no hook it added is left") done without handles: every forward hook of the leaves cleared
        Wrong("leaf_shapes_clears_every_forward_hook", FORWARD_HOOKS, "leaf_shapes", _cell('''
            def leaf_output_shapes(model, x):
                records = []
                leaves = [(name, module) for name, module in model.named_modules()
                          if next(module.children(), None) is None]

                def make_hook(name):
                    return lambda module, args, output: records.append((name, tuple(output.shape)))

                try:
                    for name, module in leaves:
                        module.register_forward_hook(make_hook(name))
                    model(x)
                finally:
                    for _, module in leaves:
                        module._forward_hooks.clear()
                return records
        '''), "the forward hooks the model held before leaf_output_shapes"),
        # the pairs gathered in a module-level list, cleared only after a call that succeeded: a call after one in
        # which model(x) raised returns the failed call's pairs too
        Wrong("leaf_shapes_keeps_a_failed_calls_pairs", FORWARD_HOOKS, "leaf_shapes", _cell('''
            _records = []


            def leaf_output_shapes(model, x):
                handles = []
                try:
                    for name, module in model.named_modules():
                        if not list(module.children()):
                            handles.append(module.register_forward_hook(
                                lambda m, args, output, name=name: _records.append((name, tuple(output.shape)))))
                    model(x)
                    result = list(_records)
                    _records.clear()
                    return result
                finally:
                    for handle in handles:
                        handle.remove()
        '''), "called right after a call in which model(x) raised"),
        # requirement 2 ("every hook is removed") done without handles: the named modules' forward hooks cleared
        Wrong("capture_clears_the_modules_forward_hooks", FORWARD_HOOKS, "capture", _cell('''
            from contextlib import contextmanager


            @contextmanager
            def capture(model, names):
                modules = dict(model.named_modules())
                outputs = {}
                try:
                    for name in names:
                        modules[name].register_forward_hook(
                            lambda module, args, output, name=name: outputs.__setitem__(name, output))
                    yield outputs
                finally:
                    for name in names:
                        if name in modules:
                            modules[name]._forward_hooks.clear()
        '''), "the forward hook model[2][0] held before capture"),
        # the outputs kept aside and put into the dict on exit: the dict is empty inside the block
        Wrong("capture_fills_the_dict_on_exit", FORWARD_HOOKS, "capture", _cell('''
            from contextlib import contextmanager


            @contextmanager
            def capture(model, names):
                modules = dict(model.named_modules())
                outputs, kept, handles = {}, {}, []
                try:
                    for name in names:
                        handles.append(modules[name].register_forward_hook(
                            lambda module, args, output, name=name: kept.__setitem__(name, output)))
                    yield outputs
                finally:
                    for handle in handles:
                        handle.remove()
                    outputs.update(kept)
        '''), "read inside the with block"),
        # "each submodule of model" read as excluding the model itself: the name "" is unknown
        Wrong("capture_leaves_out_the_model_itself", FORWARD_HOOKS, "capture", _cell('''
            from contextlib import contextmanager


            @contextmanager
            def capture(model, names):
                submodules = {name: module for name, module in model.named_modules() if name}
                outputs, handles = {}, []
                try:
                    for name in names:
                        handles.append(submodules[name].register_forward_hook(
                            lambda module, args, output, name=name: outputs.__setitem__(name, output)))
                    yield outputs
                finally:
                    for handle in handles:
                        handle.remove()
        '''), "what capture(model, ['', '2.0']) raised"),
        # activation patching read as patching the layer's input: the clean input fed to the layer again
        Wrong("patch_feeds_the_layer_its_clean_input", FORWARD_HOOKS, "patch_activation", _cell('''
            def patch(model, layer, clean, corrupted):
                kept = {}
                with layer.register_forward_pre_hook(lambda module, args: kept.__setitem__("args", args)):
                    model(clean)
                with layer.register_forward_pre_hook(lambda module, args: kept["args"]):
                    return model(corrupted)
        '''), "where model[1] adds how many times it has run"),
        # the layer's clean output computed again in the hook, from its clean input
        Wrong("patch_recomputes_the_clean_output", FORWARD_HOOKS, "patch_activation", _cell('''
            def patch(model, layer, clean, corrupted):
                kept = {}
                with layer.register_forward_pre_hook(lambda module, args: kept.__setitem__("args", args)):
                    model(clean)
                with layer.register_forward_hook(lambda module, args, output: module.forward(*kept["args"])):
                    return model(corrupted)
        '''), "where model[1] adds how many times it has run"),
        # "it removes every hook before returning" read as every hook of the layer
        Wrong("patch_removes_every_hook_of_the_layer", FORWARD_HOOKS, "patch_activation", _cell('''
            def patch(model, layer, clean, corrupted):
                kept = {}
                try:
                    layer.register_forward_hook(lambda module, args, output: kept.__setitem__("output", output))
                    model(clean)
                    layer._forward_hooks.clear()
                    layer.register_forward_hook(lambda module, args, output: kept["output"])
                    return model(corrupted)
                finally:
                    layer._forward_hooks.clear()
        '''), "the forward hook model[1] held before patch"),
        # requirement 4 ("the same when a run raises") read as an Exception only: the hooks removed in `except
        # Exception`, so a KeyboardInterrupt leaves one on the layer
        Wrong("patch_removes_its_hooks_on_exceptions_only", FORWARD_HOOKS, "patch_activation", _cell('''
            def patch(model, layer, clean, corrupted):
                kept = []
                handle = layer.register_forward_hook(lambda m, a, out: kept.append(out))
                try:
                    model(clean)
                    handle.remove()
                    handle = layer.register_forward_hook(lambda m, a, out: kept[0])
                    result = model(corrupted)
                except Exception:
                    handle.remove()
                    raise
                handle.remove()
                return result
        '''), "stopped with KeyboardInterrupt"),
        # always_call tested by the key's presence: {"always_call": False} counts as set
        Wrong("predict_order_tests_always_call_by_its_key", FORWARD_HOOKS, "predict_order", _cell('''
            def hooks_in_order(config, module, kind):
                mine = [hook for hook in config["hooks"] if hook["module"] == module and hook["kind"] == kind]
                prepended = [hook for hook in mine if hook.get("prepend")]
                return prepended[::-1] + [hook for hook in mine if not hook.get("prepend")]


            class ForwardFailed(Exception):
                """What the forward of the module ``config["raises"]`` names raises."""


            def predict_order(config):
                order = []

                def call(module):
                    order.extend(hook["label"] for hook in hooks_in_order(config, module, "pre"))
                    try:
                        if module == "outer":
                            for child in config["run"]:
                                call(child)
                        if config["raises"] == module:
                            raise ForwardFailed(f"{module}.forward failed")
                    except ForwardFailed:
                        kept = hooks_in_order(config, module, "hook")
                        order.extend(hook["label"] for hook in kept if "always_call" in hook)
                        raise
                    order.extend(hook["label"] for hook in hooks_in_order(config, module, "hook"))

                try:
                    call("outer")
                except ForwardFailed:
                    pass
                return order
        '''), "predict_order for the case 'a raising, with hooks whose options"),
        # prepend tested by the key's presence, as above
        Wrong("predict_order_tests_prepend_by_its_key", FORWARD_HOOKS, "predict_order", _cell('''
            def hooks_in_order(config, module, kind):
                mine = [hook for hook in config["hooks"] if hook["module"] == module and hook["kind"] == kind]
                prepended = [hook for hook in mine if "prepend" in hook]
                return prepended[::-1] + [hook for hook in mine if "prepend" not in hook]


            class ForwardFailed(Exception):
                """What the forward of the module ``config["raises"]`` names raises."""


            def predict_order(config):
                order = []

                def call(module):
                    order.extend(hook["label"] for hook in hooks_in_order(config, module, "pre"))
                    try:
                        if module == "outer":
                            for child in config["run"]:
                                call(child)
                        if config["raises"] == module:
                            raise ForwardFailed(f"{module}.forward failed")
                    except ForwardFailed:
                        kept = hooks_in_order(config, module, "hook")
                        order.extend(hook["label"] for hook in kept if hook.get("always_call"))
                        raise
                    order.extend(hook["label"] for hook in hooks_in_order(config, module, "hook"))

                try:
                    call("outer")
                except ForwardFailed:
                    pass
                return order
        '''), "predict_order for the case 'options written out as False"),
        # each registration placed by its position in config["hooks"], found with list.index: two alike share one
        Wrong("predict_order_places_hooks_by_list_index", FORWARD_HOOKS, "predict_order", _cell('''
            def hooks_in_order(config, module, kind):
                mine = [hook for hook in config["hooks"] if hook["module"] == module and hook["kind"] == kind]

                def place(hook):
                    position = config["hooks"].index(hook)
                    return (0, -position) if hook.get("prepend") else (1, position)

                return sorted(mine, key=place)


            class ForwardFailed(Exception):
                """What the forward of the module ``config["raises"]`` names raises."""


            def predict_order(config):
                order = []

                def call(module):
                    order.extend(hook["label"] for hook in hooks_in_order(config, module, "pre"))
                    try:
                        if module == "outer":
                            for child in config["run"]:
                                call(child)
                        if config["raises"] == module:
                            raise ForwardFailed(f"{module}.forward failed")
                    except ForwardFailed:
                        kept = hooks_in_order(config, module, "hook")
                        order.extend(hook["label"] for hook in kept if hook.get("always_call"))
                        raise
                    order.extend(hook["label"] for hook in hooks_in_order(config, module, "hook"))

                try:
                    call("outer")
                except ForwardFailed:
                    pass
                return order
        '''), "predict_order for the case 'one hook registered twice"),
    ]
