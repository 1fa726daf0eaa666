"""10_hooks_inside_pytorch: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and
its wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

import torch

from catalogues.honest_answers import HOOKS_INSIDE_PYTORCH, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

SPACE: dict[str, list[Dimension]] = {
    "mask_parameter": [
        Dimension("a bias masked", lambda call: call.args[1] == "bias"),
        Dimension("a Conv1d", lambda call: type(call.args[0]).__name__ == "Conv1d"),
        Dimension("a float64 parameter", lambda call: call.args[2].dtype == torch.float64),
        Dimension("a mask of zeros", lambda call: not bool(call.args[2].any())),
        Dimension("a mask of ones", lambda call: bool(call.args[2].all())),
        Dimension("a module with one parameter masked already", lambda call: hasattr(call.args[0], "weight_orig")),
        Dimension("a Linear with one input",
                  lambda call: type(call.args[0]).__name__ == "Linear" and call.args[0].in_features == 1),
        Dimension("new <name>_orig and <name>_mask objects after the call (load_state_dict(..., assign=True))",
                  reading="masked (hidden): the output after load_state_dict(..., assign=True), *_orig doubled"),
        Dimension("a mask the caller keeps (the buffer a copy of it)",
                  reading="masked: whether <name>_mask shares its memory with the mask given"),
    ],
    "add_lora": [
        Dimension("rank 1", lambda call: call.args[1] == 1),
        Dimension("a rank above 1", lambda call: call.args[1] > 1),
        Dimension("a Linear without a bias", lambda call: call.args[0].bias is None),
        Dimension("a float64 Linear", lambda call: call.args[0].weight.dtype.itemsize == 8),
        Dimension("one output feature", lambda call: call.args[0].out_features == 1),
    ],
    "training_flops": [
        Dimension("a 2-D input", lambda call: len(call.args[1]) == 2),
        Dimension("a 3-D input", lambda call: len(call.args[1]) == 3),
        Dimension("a batch of 1", lambda call: call.args[1][0] == 1),
        Dimension("an input 2**20 wide", lambda call: 2**20 in call.args[1]),
        Dimension("a second call with the same build", lambda call: call.number > 0),
        Dimension("an input that must not be made in real memory either",
                  reading="check_flops: a function mode records every torch call that returns a tensor in real memory"),
        Dimension("a wrong type returned (an int)", reading="check_flops: the type checked first, the rest skipped"),
    ],
    "store_saved_in": [
        Dimension("float16 storage", lambda call: str(call.args[1]) == "torch.float16"),
        Dimension("bfloat16 storage", lambda call: str(call.args[1]) == "torch.bfloat16"),
        Dimension("a node that saved nothing",
                  lambda call: not [n for n in dir(call.args[0]) if n.startswith("_raw_saved_")]),
        Dimension("a node with a slot saved as None",
                  lambda call: any(n.startswith("_saved_") and getattr(call.args[0], n) is None
                                   for n in dir(call.args[0]))),
    ],
    "scaled_fp16_hook": [
        Dimension("a float64 bucket", lambda call: call.args[1].buffer().dtype.itemsize == 8),
        Dimension("a bucket of zeros", lambda call: not bool(call.args[1].buffer().any())),
        Dimension("a group made with new_group", lambda call: call.args[0] is not None),
        Dimension("a gradient float16 cannot hold (over 65504)",
                  lambda call: float(call.args[1].buffer().abs().max()) > 65504),
        Dimension("a bucket beside another (several buckets)", lambda call: call.args[1].index() > 0),
        Dimension("a group whose collectives show nothing on one process (MAX all-reduce, group, async)",
                  reading="check_watched (hidden): a dispatch mode records each c10d operator, its reduce op, group "
                          "and async_op while the hook runs on DDP's bucket"),
        Dimension("a buffer DDP overwrites afterwards",
                  reading="check_watched (hidden): the buffer right after the hook returns, against a copy"),
        Dimension("a float64 buffer whose value DDP would cast back",
                  reading="check_watched (hidden): the dtype of the future's value"),
    ],
}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
    return [
        # "the parameter moves" read as a copy of it: the optimizer built before keeps the old one
        Wrong("mask_parameter_copies_the_parameter", HOOKS_INSIDE_PYTORCH, "mask_parameter", _cell('''
            def mask_parameter(module, name, mask):
                original = nn.Parameter(getattr(module, name).detach().clone())
                del module._parameters[name]
                module.register_parameter(name + "_orig", original)
                module.register_buffer(name + "_mask", mask.clone())
                module.register_forward_pre_hook(
                    lambda m, args: setattr(m, name, getattr(m, name + "_orig") * getattr(m, name + "_mask")))
                setattr(module, name, original * mask)
        '''), "is the Parameter"),
        # "set at once" read as enough: the masked weight computed once, no pre-hook
        Wrong("mask_parameter_masks_once", HOOKS_INSIDE_PYTORCH, "mask_parameter", _cell('''
            def mask_parameter(module, name, mask):
                original = getattr(module, name)
                del module._parameters[name]
                module.register_parameter(name + "_orig", original)
                module.register_buffer(name + "_mask", mask.clone())
                setattr(module, name, original * mask)
        '''), "after one SGD step"),
        # the mask kept as a parameter that does not train, rather than a buffer
        Wrong("mask_parameter_mask_as_a_parameter", HOOKS_INSIDE_PYTORCH, "mask_parameter", _cell('''
            def mask_parameter(module, name, mask):
                original = getattr(module, name)
                del module._parameters[name]
                module.register_parameter(name + "_orig", original)
                module.register_parameter(name + "_mask", nn.Parameter(mask, requires_grad=False))

                def hook(module, args):
                    setattr(module, name, getattr(module, name + "_orig") * getattr(module, name + "_mask"))

                hook(module, ())
                module.register_forward_pre_hook(hook)
        '''), "the parameters of"),
        # the example's "weight" taken for the only parameter there is
        Wrong("mask_parameter_weight_only", HOOKS_INSIDE_PYTORCH, "mask_parameter", _cell('''
            def mask_parameter(module, name, mask):
                original = module.weight
                del module._parameters["weight"]
                module.register_parameter("weight_orig", original)
                module.register_buffer("weight_mask", mask.clone())

                def hook(module, args):
                    module.weight = module.weight_orig * module.weight_mask

                hook(module, ())
                module.register_forward_pre_hook(hook)
        '''), "bias_orig"),
        # "computed again before every forward" read as the product of the tensors the call had in hand: the hook
        # multiplies the objects captured at registration, and a new weight_orig (load_state_dict(..., assign=True))
        # is not followed
        Wrong("mask_parameter_hook_captures_the_tensors", HOOKS_INSIDE_PYTORCH, "mask_parameter", _cell('''
            def mask_parameter(module: nn.Module, name: str, mask: torch.Tensor) -> None:
                param = getattr(module, name)
                delattr(module, name)
                module.register_parameter(name + "_orig", param)
                buffer = mask.to(param.dtype).clone()
                module.register_buffer(name + "_mask", buffer)
                setattr(module, name, param * buffer)
                module.register_forward_pre_hook(lambda mod, args: setattr(mod, name, param * buffer))
        '''), "after load_state_dict(..., assign=True)"),
        # "mask becomes a buffer" read as the caller's tensor itself: changing it later changes the module
        Wrong("mask_parameter_registers_the_mask_given", HOOKS_INSIDE_PYTORCH, "mask_parameter", _cell('''
            def mask_parameter(module, name, mask):
                original = getattr(module, name)
                del module._parameters[name]
                module.register_parameter(name + "_orig", original)
                module.register_buffer(name + "_mask", mask)

                def hook(module, args):
                    setattr(module, name, getattr(module, name + "_orig") * getattr(module, name + "_mask"))

                hook(module, ())
                module.register_forward_pre_hook(hook)
        '''), "shares its memory with the mask given"),
        # "A zeros, B drawn" swapped: the layer still computes what it did, but A is not zeros
        Wrong("add_lora_zeros_b", HOOKS_INSIDE_PYTORCH, "add_lora", _cell('''
            class LowRank(nn.Module):
                def __init__(self, out_features, in_features, rank, dtype):
                    super().__init__()
                    self.A = nn.Parameter(torch.randn(out_features, rank, dtype=dtype) * 0.01)
                    self.B = nn.Parameter(torch.zeros(rank, in_features, dtype=dtype))

                def forward(self, W):
                    return W + self.A @ self.B


            def add_lora(layer, rank):
                layer.weight.requires_grad_(False)
                if layer.bias is not None:
                    layer.bias.requires_grad_(False)
                update = LowRank(layer.out_features, layer.in_features, rank, layer.weight.dtype)
                parametrize.register_parametrization(layer, "weight", update)
        '''), "A right after add_lora"),
        # "freeze everything else" read as the weight only: the bias still trains
        Wrong("add_lora_bias_trains", HOOKS_INSIDE_PYTORCH, "add_lora", _cell('''
            class LowRank(nn.Module):
                def __init__(self, out_features, in_features, rank, dtype):
                    super().__init__()
                    self.A = nn.Parameter(torch.zeros(out_features, rank, dtype=dtype))
                    self.B = nn.Parameter(torch.randn(rank, in_features, dtype=dtype) * 0.01)

                def forward(self, W):
                    return W + self.A @ self.B


            def add_lora(layer, rank):
                layer.weight.requires_grad_(False)
                update = LowRank(layer.out_features, layer.in_features, rank, layer.weight.dtype)
                parametrize.register_parametrization(layer, "weight", update)
        '''), "that require grad"),
        # A and B made in torch's default dtype, not the weight's
        Wrong("add_lora_default_dtype", HOOKS_INSIDE_PYTORCH, "add_lora", _cell('''
            class LowRank(nn.Module):
                def __init__(self, out_features, in_features, rank):
                    super().__init__()
                    self.A = nn.Parameter(torch.zeros(out_features, rank))
                    self.B = nn.Parameter(torch.randn(rank, in_features) * 0.01)

                def forward(self, W):
                    return W + self.A @ self.B


            def add_lora(layer, rank):
                for parameter in layer.parameters():
                    parameter.requires_grad_(False)
                update = LowRank(layer.out_features, layer.in_features, rank)
                parametrize.register_parametrization(layer, "weight", update)
        '''), "has dtype torch.float32, expected torch.float64"),
        # "W + A @ B" with W a frozen copy kept in the parametrisation, not the original it is given
        Wrong("add_lora_keeps_a_copy_of_w", HOOKS_INSIDE_PYTORCH, "add_lora", _cell('''
            class LowRank(nn.Module):
                def __init__(self, weight, rank):
                    super().__init__()
                    self.register_buffer("W", weight.detach().clone())
                    self.A = nn.Parameter(torch.zeros(weight.shape[0], rank, dtype=weight.dtype))
                    self.B = nn.Parameter(torch.randn(rank, weight.shape[1], dtype=weight.dtype) * 0.01)

                def forward(self, original):
                    return self.W + self.A @ self.B


            def add_lora(layer, rank):
                for parameter in layer.parameters():
                    parameter.requires_grad_(False)
                parametrize.register_parametrization(layer, "weight", LowRank(layer.weight, rank))
        '''), "state_dict"),
        # FLOPs worked out from the Linear layers' shapes, as the visible test's comment does, not counted
        Wrong("training_flops_by_formula", HOOKS_INSIDE_PYTORCH, "training_flops", _cell('''
            def training_flops(build, shape):
                with torch.device("meta"):
                    model = build()
                rows = 1
                for size in shape[:-1]:
                    rows *= size
                linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
                forward = backward = 0
                for position, layer in enumerate(linears):
                    forward += 2 * rows * layer.in_features * layer.out_features
                    backward += 2 * rows * layer.in_features * layer.out_features  # the weight's gradient
                    if position > 0:
                        backward += 2 * rows * layer.in_features * layer.out_features  # the input's gradient
                return forward, backward
        '''), "training_flops on"),
        # 09's "FLOPs of the matrix products" carried over: only mm and addmm are summed
        Wrong("training_flops_matrix_products_only", HOOKS_INSIDE_PYTORCH, "training_flops", _cell('''
            def products(counter):
                counts = counter.get_flop_counts()["Global"]
                return sum(count for op, count in counts.items() if str(op) in ("aten.mm", "aten.addmm"))


            def training_flops(build, shape):
                with torch.device("meta"):
                    model = build()
                    x = torch.randn(shape)
                with FlopCounterMode(display=False) as forward:
                    loss = model(x).sum()
                with FlopCounterMode(display=False) as backward:
                    loss.backward()
                return products(forward), products(backward)
        '''), "training_flops on"),
        # "the FLOPs of the layers": the counts of the nn.Linear modules only
        Wrong("training_flops_linear_modules_only", HOOKS_INSIDE_PYTORCH, "training_flops", _cell('''
            def training_flops(build, shape):
                with torch.device("meta"):
                    model = build()
                    x = torch.randn(shape)
                root = type(model).__name__
                linears = [f"{root}.{name}" for name, m in model.named_modules() if isinstance(m, nn.Linear)]
                with FlopCounterMode(display=False) as counter:
                    loss = model(x).sum()
                    counts = counter.get_flop_counts()
                    forward = sum(sum(counts.get(name, {}).values()) for name in linears)
                    loss.backward()
                counts = counter.get_flop_counts()
                return forward, sum(sum(counts.get(name, {}).values()) for name in linears) - forward
        '''), "training_flops on"),
        # "the backward pass's FLOPs" read as the counter's total after the backward: the step's, forward included
        Wrong("training_flops_backward_is_the_running_total", HOOKS_INSIDE_PYTORCH, "training_flops", _cell('''
            def training_flops(build, shape):
                with FakeTensorMode():
                    model = build()
                    x = torch.randn(shape)
                    with FlopCounterMode(display=False) as counter:
                        loss = model(x).sum()
                        forward = counter.get_total_flops()
                        loss.backward()
                return forward, counter.get_total_flops()
        '''), "training_flops on"),
        # the text's "about twice forward" taken as the rule: the backward not counted
        Wrong("training_flops_backward_twice_the_forward", HOOKS_INSIDE_PYTORCH, "training_flops", _cell('''
            def training_flops(build, shape):
                with torch.device("meta"):
                    model = build()
                    x = torch.randn(shape)
                with FlopCounterMode(display=False) as counter:
                    model(x).sum()
                forward = counter.get_total_flops()
                return forward, 2 * forward
        '''), "training_flops on"),
        # requirement 3 missed: x requires grad, and its gradient's products join the backward
        Wrong("training_flops_input_requires_grad", HOOKS_INSIDE_PYTORCH, "training_flops", _cell('''
            def training_flops(build, shape):
                with torch.device("meta"):
                    model = build()
                    x = torch.randn(shape, requires_grad=True)
                with FlopCounterMode(display=False) as forward:
                    loss = model(x).sum()
                with FlopCounterMode(display=False) as backward:
                    loss.backward()
                return forward.get_total_flops(), backward.get_total_flops()
        '''), "training_flops on"),
        # "without allocating the model's memory" read as the model's only: the input is made in real memory, then moved
        Wrong("training_flops_input_made_in_real_memory", HOOKS_INSIDE_PYTORCH, "training_flops", _cell('''
            def training_flops(build, shape: tuple[int, ...]) -> tuple[int, int]:
                with torch.device("meta"):
                    model = build()
                x = torch.randn(shape).to("meta")
                with FlopCounterMode(display=False) as forward:
                    loss = model(x).sum()
                with FlopCounterMode(display=False) as backward:
                    loss.backward()
                return int(forward.get_total_flops()), int(backward.get_total_flops())
        '''), "made a tensor in real memory"),
        # "an int" of the earlier text: the total, not the pair
        Wrong("training_flops_the_total", HOOKS_INSIDE_PYTORCH, "training_flops", _cell('''
            def training_flops(build, shape):
                with FakeTensorMode():
                    model = build()
                    x = torch.randn(shape)
                    with FlopCounterMode(display=False) as counter:
                        model(x).sum().backward()
                return counter.get_total_flops()
        '''), "the type of training_flops on"),
        # the example's bfloat16 taken for the only dtype: the dtype given is ignored
        Wrong("store_saved_in_bfloat16_always", HOOKS_INSIDE_PYTORCH, "store_saved_in", _cell('''
            def store_saved_in(node, dtype):
                count = 0
                for name in dir(node):
                    if name.startswith("_saved_") and isinstance(getattr(node, name), torch.Tensor):
                        kind = getattr(node, name).dtype
                        getattr(node, "_raw" + name).register_hooks(lambda t: t.to(torch.bfloat16),
                                                                    lambda t, kind=kind: t.to(kind))
                        count += 1
                return count
        '''), "the gradient of input"),
        # "every tensor the node saved" read as every _raw_saved_ attribute, a slot saved as None among them
        Wrong("store_saved_in_none_slots_too", HOOKS_INSIDE_PYTORCH, "store_saved_in", _cell('''
            def store_saved_in(node, dtype):
                count = 0
                for name in dir(node):
                    if name.startswith("_raw_saved_"):
                        kind = []
                        getattr(node, name).register_hooks(lambda t, kind=kind: kind.append(t.dtype) or t.to(dtype),
                                                           lambda t, kind=kind: t.to(kind[0]))
                        count += 1
                return count
        '''), "None is forbidden"),
        # "the node" read as the graph it ends: every node before it is hooked too
        Wrong("store_saved_in_whole_graph", HOOKS_INSIDE_PYTORCH, "store_saved_in", _cell('''
            def store_saved_in(node, dtype):
                count, todo, seen = 0, [node], set()
                while todo:
                    current = todo.pop()
                    if current is None or current in seen:
                        continue
                    seen.add(current)
                    for name in dir(current):
                        if name.startswith("_saved_") and isinstance(getattr(current, name), torch.Tensor):
                            kind = getattr(current, name).dtype
                            getattr(current, "_raw" + name).register_hooks(lambda t: t.to(dtype),
                                                                           lambda t, kind=kind: t.to(kind))
                            count += 1 if current is node else 0
                    todo.extend(next_node for next_node, _ in current.next_functions)
                return count
        '''), "the gradient of input 0"),
        # "scaled by the largest magnitude" read per gradient, not per bucket
        Wrong("scaled_fp16_hook_per_parameter", HOOKS_INSIDE_PYTORCH, "scaled_fp16_hook", _cell('''
            def scaled_fp16_hook(group, bucket):
                group = group or dist.group.WORLD
                buffer = bucket.buffer()
                parts, scales, start = [], [], 0
                for gradient in bucket.gradients():
                    piece = buffer[start:start + gradient.numel()]
                    scale = piece.abs().max()
                    dist.all_reduce(scale, op=dist.ReduceOp.MAX, group=group)
                    scale = torch.where(scale == 0, torch.ones_like(scale), scale)
                    parts.append(piece / scale)
                    scales.append(torch.full_like(piece, 1.0) * scale)
                    start += gradient.numel()
                compressed = torch.cat(parts).to(torch.float16)
                factors = torch.cat(scales)
                work = dist.all_reduce(compressed, group=group, async_op=True)
                return work.get_future().then(
                    lambda future: future.value()[0].to(buffer.dtype) * factors / group.size())
        '''), ".grad of"),
        # float16 taken for "a half-precision type": bfloat16 sent instead
        Wrong("scaled_fp16_hook_bfloat16", HOOKS_INSIDE_PYTORCH, "scaled_fp16_hook", _cell('''
            def scaled_fp16_hook(group, bucket):
                group = group or dist.group.WORLD
                buffer = bucket.buffer()
                scale = buffer.abs().max()
                dist.all_reduce(scale, op=dist.ReduceOp.MAX, group=group)
                scale = torch.where(scale == 0, torch.ones_like(scale), scale)
                work = dist.all_reduce((buffer / scale).to(torch.bfloat16), group=group, async_op=True)
                return work.get_future().then(lambda future: future.value()[0].to(buffer.dtype) * scale / group.size())
        '''), ".grad of"),
        # the zero bucket forgotten: 0 / 0 is nan
        Wrong("scaled_fp16_hook_no_zero_guard", HOOKS_INSIDE_PYTORCH, "scaled_fp16_hook", _cell('''
            def scaled_fp16_hook(group, bucket):
                group = group or dist.group.WORLD
                buffer = bucket.buffer()
                scale = buffer.abs().max()
                dist.all_reduce(scale, op=dist.ReduceOp.MAX, group=group)
                work = dist.all_reduce((buffer / scale).to(torch.float16), group=group, async_op=True)
                return work.get_future().then(lambda future: future.value()[0].to(buffer.dtype) * scale / group.size())
        '''), "zero gradients"),
        # "no gradient underflows" read as the only danger: small buckets scaled up, large ones sent as they are
        Wrong("scaled_fp16_hook_scales_small_buckets_only", HOOKS_INSIDE_PYTORCH, "scaled_fp16_hook", _cell('''
            def scaled_fp16_hook(group, bucket):
                group = group or dist.group.WORLD
                buffer = bucket.buffer()
                scale = buffer.abs().max()
                dist.all_reduce(scale, op=dist.ReduceOp.MAX, group=group)
                scale = torch.where((scale == 0) | (scale > 1), torch.ones_like(scale), scale)
                work = dist.all_reduce((buffer / scale).to(torch.float16), group=group, async_op=True)
                return work.get_future().then(lambda future: future.value()[0].to(buffer.dtype) * scale / group.size())
        '''), "huge gradients"),
        # "the same scale on every process" missed: each process scales by its own largest magnitude
        Wrong("scaled_fp16_hook_scale_not_shared", HOOKS_INSIDE_PYTORCH, "scaled_fp16_hook", _cell('''
            def scaled_fp16_hook(group, bucket):
                group = group if group is not None else dist.group.WORLD
                buffer = bucket.buffer()
                scale = buffer.abs().max()
                scale = torch.where(scale > 0, scale, torch.ones_like(scale))
                compressed = (buffer / scale).to(torch.float16)
                work = dist.all_reduce(compressed, group=group, async_op=True)
                return work.get_future().then(lambda f: f.value()[0].to(buffer.dtype) * scale / group.size())
        '''), "the collectives scaled_fp16_hook ran"),
        # the group taken for the default one: every collective runs on WORLD, whatever group DDP was given
        Wrong("scaled_fp16_hook_default_group", HOOKS_INSIDE_PYTORCH, "scaled_fp16_hook", _cell('''
            def scaled_fp16_hook(group, bucket):
                buffer = bucket.buffer()
                scale = buffer.abs().max()
                dist.all_reduce(scale, op=dist.ReduceOp.MAX)
                scale = torch.where(scale > 0, scale, torch.ones_like(scale))
                size = dist.get_world_size()
                work = dist.all_reduce((buffer / scale).to(torch.float16), async_op=True)
                return work.get_future().then(lambda f: f.value()[0].to(buffer.dtype) * scale / size)
        '''), "the collectives scaled_fp16_hook ran"),
        # "its result is the future's value" read as licence to scale the buffer in place
        Wrong("scaled_fp16_hook_divides_the_buffer", HOOKS_INSIDE_PYTORCH, "scaled_fp16_hook", _cell('''
            def scaled_fp16_hook(group, bucket):
                group = group if group is not None else dist.group.WORLD
                buffer = bucket.buffer()
                scale = buffer.abs().max()
                dist.all_reduce(scale, op=dist.ReduceOp.MAX, group=group)
                scale = torch.where(scale > 0, scale, torch.ones_like(scale))
                buffer.div_(scale)
                work = dist.all_reduce(buffer.to(torch.float16), group=group, async_op=True)
                return work.get_future().then(lambda f: f.value()[0].to(buffer.dtype) * scale / group.size())
        '''), "right after scaled_fp16_hook returned"),
        # "in the buffer's dtype" missed: the value is always float32, which DDP copies into a float64 .grad
        Wrong("scaled_fp16_hook_float32_result", HOOKS_INSIDE_PYTORCH, "scaled_fp16_hook", _cell('''
            def scaled_fp16_hook(group, bucket):
                group = group if group is not None else dist.group.WORLD
                buffer = bucket.buffer()
                scale = buffer.abs().max()
                dist.all_reduce(scale, op=dist.ReduceOp.MAX, group=group)
                scale = torch.where(scale > 0, scale, torch.ones_like(scale))
                work = dist.all_reduce((buffer / scale).to(torch.float16), group=group, async_op=True)
                return work.get_future().then(lambda f: f.value()[0].float() * scale.float() / group.size())
        '''), "the dtype of the value of the future"),
    ]
