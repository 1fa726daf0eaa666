"""03_backward_hooks: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

from catalogues.honest_answers import BACKWARD_HOOKS, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong


def _edges(tensor) -> list[tuple[object, int]]:
    """The (node, output index) pairs of the graph behind ``tensor``, each edge once per node visited."""
    edges, seen, stack = [], set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for edge in node.next_functions:
            if edge[0] is not None:
                edges.append(edge)
                stack.append(edge[0])
    return edges


def _has_a_none_entry(tensor) -> bool:
    """Some node behind ``tensor`` has an input that needs no gradient."""
    nodes = {edge[0] for edge in _edges(tensor)} | {tensor.grad_fn}
    return any(entry[0] is None for node in nodes if node is not None for entry in node.next_functions)


def _parameters_outside_linear_layers(model) -> bool:
    """Some parameter of ``model`` belongs to a module that is not an nn.Linear."""
    return any(type(module).__name__ != "Linear" and list(module.parameters(recurse=False))
               for module in model.modules())


def _tied(model) -> bool:
    """A parameter held by two modules."""
    held = [id(p) for module in model.modules() for p in module.parameters(recurse=False)]
    return len(held) > len(set(held))


SPACE: dict[str, list[Dimension]] = {
    "backward_collect": [
        Dimension("inputs of one dimension", lambda c: c.target == "module_hook" and c.args[1][0].dim() == 1),
        Dimension("inputs of two dimensions", lambda c: c.target == "module_hook" and c.args[1][0].dim() == 2),
        Dimension("inputs of three dimensions", lambda c: c.target == "module_hook" and c.args[1][0].dim() == 3),
        Dimension("a gradient for output other than ones",
                  lambda c: c.target == "module_hook" and bool((c.args[2][0] != 1).any())),
    ],
    "tensor_hook": [
        Dimension("a zero gradient", lambda c: c.target == "tensor_hook" and bool((c.args[0] == 0).all())),
        Dimension("a negative gradient", lambda c: c.target == "tensor_hook" and bool((c.args[0] < 0).all())),
        Dimension("answer holding an item before the backward pass",
                  reading="tensor_hook_test's hidden backward on an answer that already holds an item (a global: no "
                          "call shows it)"),
        Dimension("a second backward pass through one model",
                  reading="tensor_hook_test's hidden second backward of one model: answer holds both gradients"),
    ],
    "clip_gradient": [
        Dimension("values below -1, inside [-1, 1] and above 1 in one gradient", lambda c: c.target == "clip_gradient"
                  and bool((c.args[0] < -1).any() and ((c.args[0] >= -1) & (c.args[0] <= 1)).any()
                           and (c.args[0] > 1).any())),
        Dimension("W's gradient below -1", lambda c: c.target == "clip_gradient" and c.args[0].shape == (1,)
                  and bool(c.args[0] < -1)),
        Dimension("W's gradient above 1", lambda c: c.target == "clip_gradient" and c.args[0].shape == (1,)
                  and bool(c.args[0] > 1)),
        Dimension("W's gradient inside [-1, 1]", lambda c: c.target == "clip_gradient" and c.args[0].shape == (1,)
                  and bool(c.args[0].abs() <= 1)),
        Dimension("a gradient of several values, all inside [-1, 1], called directly",
                  lambda c: c.target == "clip_gradient" and c.args[0].numel() > 1
                  and not c.args[0].requires_grad and bool((c.args[0].abs() <= 1).all())),
        Dimension("a 0-d gradient", lambda c: c.target == "clip_gradient" and c.args[0].dim() == 0),
        Dimension("a (1, 1) gradient", lambda c: c.target == "clip_gradient" and c.args[0].shape == (1, 1)),
        Dimension("a float64 gradient of one element",
                  lambda c: c.target == "clip_gradient" and str(c.args[0].dtype) == "torch.float64"
                  and c.args[0].numel() == 1),
        Dimension("a float64 gradient of several elements",
                  lambda c: c.target == "clip_gradient" and str(c.args[0].dtype) == "torch.float64"
                  and c.args[0].numel() > 1),
    ],
    "backward_pre_hook": [
        Dimension("grad_output of two dimensions",
                  lambda c: c.target == "halve_grad_output" and c.args[1][0] is not None and c.args[1][0].dim() == 2),
        Dimension("a module with two outputs", lambda c: c.target == "halve_grad_output" and len(c.args[1]) == 2),
        Dimension("an output whose gradient is None (not in the loss)",
                  lambda c: c.target == "halve_grad_output" and any(g is None for g in c.args[1])),
        Dimension("an upstream gradient with negative values",
                  lambda c: c.target == "halve_grad_output" and c.args[1][0] is not None
                  and bool((c.args[1][0] < 0).any())),
    ],
    "fused_sgd": [
        Dimension("the model itself a leaf", lambda c: c.target == "fuse_sgd" and not list(c.args[0].children())),
        Dimension("nested modules", lambda c: c.target == "fuse_sgd" and bool(list(c.args[0].children()))),
        Dimension("a parameter outside nn.Linear layers",
                  lambda c: c.target == "fuse_sgd" and _parameters_outside_linear_layers(c.args[0])),
        Dimension("a Linear without a bias", lambda c: c.target == "fuse_sgd"
                  and any(type(m).__name__ == "Linear" and m.bias is None for m in c.args[0].modules())),
        Dimension("tied weights (one parameter in two modules)", lambda c: c.target == "fuse_sgd" and _tied(c.args[0])),
    ],
    "graph_nodes": [
        Dimension("a tensor that needs no gradient",
                  lambda c: c.target == "graph_nodes" and not c.args[0].requires_grad),
        Dimension("a leaf that requires grad (no grad_fn)",
                  lambda c: c.target == "graph_nodes" and c.args[0].requires_grad and c.args[0].grad_fn is None),
        Dimension("an input that needs no gradient (a None entry)",
                  lambda c: c.target == "graph_nodes" and _has_a_none_entry(c.args[0])),
        Dimension("a node reached twice (a tensor used twice)", lambda c: c.target == "graph_nodes"
                  and len(_edges(c.args[0])) > len({edge[0] for edge in _edges(c.args[0])})),
        Dimension("a node with several outputs, two of them used", lambda c: c.target == "graph_nodes"
                  and any(index > 0 for _, index in _edges(c.args[0]))),
    ],
    "multi_grad": [
        Dimension("a group in another order than the chain's",
                  lambda c: c.target == "watch_group" and list(c.args[1]) != sorted(c.args[1])),
        Dimension("a group of one tensor", lambda c: c.target == "watch_group" and len(c.args[0]) == 1),
        Dimension("a group of five tensors", lambda c: c.target == "watch_group" and len(c.args[0]) == 5),
        Dimension("tensors of two dimensions, the first of size 1", lambda c: c.target == "watch_group"
                  and c.args[0][0].dim() == 2 and c.args[0][0].shape[0] == 1),
        Dimension("a log that already holds an entry", lambda c: c.target == "watch_group" and len(c.args[2]) > 0),
        Dimension("a loss from a point before the end of the chain",
                  reading="check_watch's losses from h_used, used drawn below the chain's length (the loss comes after "
                          "the call)"),
    ],
}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
    return [
        # requirement 2 missed: output.grad taken to be 1, as in the example
        Wrong("backward_collect_assumes_output_grad_is_one", BACKWARD_HOOKS, "backward_collect", _cell('''
            def module_hook(module, grad_input, grad_output):
                answer.extend([grad_input[0], grad_input[1], torch.ones_like(grad_output[0])])
        '''), "answer[2]"),
        # "the gradient of x1" read as the local derivative ∂output/∂x1: equal only when output.grad is 1
        Wrong("backward_collect_collects_local_derivatives", BACKWARD_HOOKS, "backward_collect", _cell('''
            def module_hook(module, grad_input, grad_output):
                answer.extend([grad_input[0] / grad_output[0], grad_input[1] / grad_output[0], grad_output[0]])
        '''), "answer[0]"),
        # gradients collected as flat vectors: right for the example's shape (1,), wrong for 2-d inputs
        Wrong("backward_collect_flattens_the_gradients", BACKWARD_HOOKS, "backward_collect", _cell('''
            def module_hook(module, grad_input, grad_output):
                answer.extend([grad_input[0].flatten(), grad_input[1].flatten(), grad_output[0].flatten()])
        '''), "answer[0]"),
        # "clamped to [-1, 1]" read as "its sign"
        Wrong("clip_gradient_keeps_only_the_sign", BACKWARD_HOOKS, "clip_gradient", _cell('''
            def clip_gradient(grad):
                return grad.sign()
        '''), "what clip_gradient returns"),
        # "as a new tensor" read as "a new tensor where something was clipped": a gradient with nothing to clip is
        # returned as it came
        Wrong("clip_gradient_returns_its_argument_when_inside", BACKWARD_HOOKS, "clip_gradient", _cell('''
            def clip_gradient(grad):
                if grad.abs().max() <= 1:
                    return grad
                return grad.clamp(-1, 1)
        '''), "whether clip_gradient returns the very tensor it was given"),
        # a one-element gradient clipped as a Python float: the result is a float32 tensor of shape (1,), whatever
        # the gradient's shape and dtype
        Wrong("clip_gradient_clips_one_element_as_a_float", BACKWARD_HOOKS, "clip_gradient", _cell('''
            def clip_gradient(grad):
                if grad.numel() == 1:
                    return torch.tensor([max(-1.0, min(1.0, grad.item()))])
                return grad.clamp(-1, 1)
        '''), "the gradient's own shape and dtype, clamped"),
        # only large gradients clipped: the lower bound forgotten
        Wrong("clip_gradient_clamps_only_from_above", BACKWARD_HOOKS, "clip_gradient", _cell('''
            def clip_gradient(grad):
                return grad.clamp(max=1.0)
        '''), "what clip_gradient returns"),
        # clipping read as clipping the norm (clip_grad_norm_'s meaning)
        Wrong("clip_gradient_clips_the_norm", BACKWARD_HOOKS, "clip_gradient", _cell('''
            def clip_gradient(grad):
                return grad * (1.0 / grad.norm()).clamp(max=1.0)
        '''), "what clip_gradient returns"),
        # "after one backward(), answer == [W.grad]" read as "answer is then exactly that": the list replaced
        Wrong("tensor_hook_replaces_the_list", BACKWARD_HOOKS, "tensor_hook", _cell('''
            def tensor_hook(grad):
                answer[:] = [grad]
        '''), "answer after two backward passes through one model"),
        # the same, guarded: only the first gradient is recorded
        Wrong("tensor_hook_records_only_into_an_empty_list", BACKWARD_HOOKS, "tensor_hook", _cell('''
            def tensor_hook(grad):
                if not answer:
                    answer.append(grad)
        '''), "answer after two backward passes through one model"),
        # the newest gradient put first
        Wrong("tensor_hook_puts_the_newest_gradient_first", BACKWARD_HOOKS, "tensor_hook", _cell('''
            def tensor_hook(grad):
                answer.insert(0, grad)
        '''), "answer after two backward passes through one model"),
        # "half of each gradient in grad_output" written for the one output of the example
        Wrong("halve_grad_output_halves_the_first_gradient_only", BACKWARD_HOOKS, "backward_pre_hook", _cell('''
            def halve_grad_output(module, grad_output):
                return (grad_output[0] / 2,)
        '''), "what halve_grad_output(module, grad_output) returns on a module with two outputs"),
        # every entry of grad_output taken to be a tensor: an output outside the loss has None
        Wrong("halve_grad_output_halves_every_entry", BACKWARD_HOOKS, "backward_pre_hook", _cell('''
            def halve_grad_output(module, grad_output):
                return tuple(g * 0.5 for g in grad_output)
        '''), "raised TypeError: unsupported operand type(s) for *: 'NoneType'"),
        # the None entries left out of the new tuple
        Wrong("halve_grad_output_leaves_out_missing_gradients", BACKWARD_HOOKS, "backward_pre_hook", _cell('''
            def halve_grad_output(module, grad_output):
                return tuple(g / 2 for g in grad_output if g is not None)
        '''), "what halve_grad_output(module, grad_output) returns on a module with two outputs"),
        # "every parameter of model" read as the weights and biases of its Linear layers
        Wrong("fuse_sgd_steps_the_linear_layers", BACKWARD_HOOKS, "fused_sgd", _cell('''
            def fuse_sgd(model, lr):
                def step(param):
                    with torch.no_grad():
                        param -= lr * param.grad
                    param.grad = None

                linears = [module for module in model.modules() if isinstance(module, nn.Linear)]
                chosen = [param for layer in linears for param in layer.parameters()]
                return [param.register_post_accumulate_grad_hook(step) for param in chosen]
        '''), "returns (the list of the hooks' handles, one per parameter)"),
        # the parameters picked by name, those called weight or bias
        Wrong("fuse_sgd_steps_weights_and_biases", BACKWARD_HOOKS, "fused_sgd", _cell('''
            def fuse_sgd(model, lr):
                def step(param):
                    with torch.no_grad():
                        param -= lr * param.grad
                    param.grad = None

                chosen = [param for name, param in model.named_parameters() if name.endswith(("weight", "bias"))]
                return [param.register_post_accumulate_grad_hook(step) for param in chosen]
        '''), "returns (the list of the hooks' handles, one per parameter)"),
        # every module's parameters() (children's included): a parameter is hooked once per module above it
        Wrong("fuse_sgd_hooks_each_modules_parameters", BACKWARD_HOOKS, "fused_sgd", _cell('''
            def fuse_sgd(model, lr):
                def step(param):
                    if param.grad is None:  # already stepped by another module's hook
                        return
                    with torch.no_grad():
                        param -= lr * param.grad
                    param.grad = None

                return [param.register_post_accumulate_grad_hook(step) for module in model.modules()
                        for param in module.parameters()]
        '''), "returns (the list of the hooks' handles, one per parameter)"),
        # the entries of next_functions (node, index) marked seen: a node with two outputs used is listed twice
        Wrong("graph_nodes_marks_the_entries_seen", BACKWARD_HOOKS, "graph_nodes", _cell('''
            def graph_nodes(tensor):
                names, seen = [], set()

                def visit(entry):
                    if entry[0] is None or entry in seen:
                        return
                    seen.add(entry)
                    names.append(type(entry[0]).__name__)
                    for next_entry in entry[0].next_functions:
                        visit(next_entry)

                visit((tensor.grad_fn, 0))
                return names
        '''), "graph_nodes((u * v).sum()) with u, v = torch.stack([a, b]).unbind()"),
        # the same walk with a stack
        Wrong("graph_nodes_stacks_the_entries", BACKWARD_HOOKS, "graph_nodes", _cell('''
            def graph_nodes(tensor):
                names, seen, stack = [], set(), [(tensor.grad_fn, 0)]
                while stack:
                    entry = stack.pop()
                    if entry[0] is None or entry in seen:
                        continue
                    seen.add(entry)
                    names.append(type(entry[0]).__name__)
                    stack.extend(reversed(entry[0].next_functions))
                return names
        '''), "graph_nodes((u * v).sum()) with u, v = torch.stack([a, b]).unbind()"),
        # "a tensor without grad_fn" read as "a tensor that needs no gradient": a leaf that requires grad has none too
        Wrong("graph_nodes_tests_requires_grad_for_a_graph", BACKWARD_HOOKS, "graph_nodes", _cell('''
            def graph_nodes(tensor):
                if not tensor.requires_grad:
                    return []
                names, seen, stack = [], set(), [tensor.grad_fn]
                while stack:
                    node = stack.pop()
                    if node in seen:
                        continue
                    seen.add(node)
                    names.append(type(node).__name__)
                    stack.extend(next_node for next_node, _ in reversed(node.next_functions) if next_node is not None)
                return names
        '''), "raised AttributeError: 'NoneType' object has no attribute 'next_functions'"),
        # the gradients squeezed to plain vectors before they are logged
        Wrong("watch_group_squeezes_the_gradients", BACKWARD_HOOKS, "multi_grad", _cell('''
            from torch.autograd.graph import register_multi_grad_hook


            def watch_group(tensors, names, log):
                def first(grad):
                    log.append(("first", grad.squeeze()))

                def every(grads):
                    log.append(("all", {name: None if g is None else g.squeeze() for name, g in zip(names, grads)}))

                return [register_multi_grad_hook(tensors, first, mode="any"), register_multi_grad_hook(tensors, every)]
        '''), "log[0] ('first') after watch_group("),
        # "after each backward pass, log holds two new entries" read as "log holds the last pass's two entries"
        Wrong("watch_group_empties_the_log_each_pass", BACKWARD_HOOKS, "multi_grad", _cell('''
            from torch.autograd.graph import register_multi_grad_hook


            def watch_group(tensors, names, log):
                def first(grad):
                    log.clear()
                    log.append(("first", grad))

                def every(grads):
                    log.append(("all", dict(zip(names, grads))))

                return [register_multi_grad_hook(tensors, first, mode="any"), register_multi_grad_hook(tensors, every)]
        '''), "on a log that already held an entry"),
        # the gradients flattened before they are logged
        Wrong("watch_group_flattens_the_gradients", BACKWARD_HOOKS, "multi_grad", _cell('''
            from torch.autograd.graph import register_multi_grad_hook


            def watch_group(tensors, names, log):
                def first(grad):
                    log.append(("first", grad.flatten()))

                def every(grads):
                    log.append(("all", {name: None if g is None else g.flatten() for name, g in zip(names, grads)}))

                return [register_multi_grad_hook(tensors, first, mode="any"), register_multi_grad_hook(tensors, every)]
        '''), "log[0] ('first') after watch_group("),
    ]
