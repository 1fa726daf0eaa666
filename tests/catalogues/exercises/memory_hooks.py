"""07_memory_hooks: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

import torch
from torch import nn

from catalogues.honest_answers import MEMORY_HOOKS, _cell
from catalogues.input_space import Dimension
from catalogues.wrong_answers import Wrong

SPACE: dict[str, list[Dimension]] = {
    "saved_bytes": [
        Dimension("float64 inputs", lambda c: c.target == "saved_bytes"
                  and any(isinstance(a, torch.Tensor) and a.dtype == torch.float64 for a in c.args[1:])),
        Dimension("an input that needs no gradient", lambda c: c.target == "saved_bytes"
                  and any(isinstance(a, torch.Tensor) and not a.requires_grad for a in c.args[1:])),
        Dimension("an nn.Module as fn", lambda c: c.target == "saved_bytes" and isinstance(c.args[0], nn.Module)),
        Dimension("a one-row input", lambda c: c.target == "saved_bytes"
                  and any(isinstance(a, torch.Tensor) and a.dim() == 2 and len(a) == 1 for a in c.args[1:])),
        Dimension("views, and a tensor that two operations save",
                  reading="saved_bytes_test: a[:1] * a[:1], and an MLP whose ReLU output the next Linear saves again"),
        Dimension("a backward pass inside fn", reading="saved_bytes_test: (x * y).sum().backward() as fn, then x.grad"),
    ],
    "half_precision": [
        *(Dimension(f"a {kind} tensor", lambda c, kind=kind: c.target == "pack_half" and c.args[0].dtype == kind)
          for kind in (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.int32,
                       torch.uint8, torch.bool)),
        Dimension("an nn.Parameter", lambda c: c.target == "pack_half" and isinstance(c.args[0], nn.Parameter)),
        Dimension("a saved activation (it requires grad)", lambda c: c.target == "pack_half"
                  and c.args[0].requires_grad and not isinstance(c.args[0], nn.Parameter)),
        Dimension("values beyond float16's range (from 65520 on: inf) and at its edge (65504)",
                  lambda c: c.target == "pack_half" and c.args[0].is_floating_point()
                  and bool((c.args[0].detach().abs() >= 65520).any())
                  and bool((c.args[0].detach().abs() == 65504).any())),
    ],
    "checkpointing": [
        Dimension("one block twice in the list", lambda c: c.target == "run_checkpointed"
                  and len({id(block) for block in c.args[0]}) < len(c.args[0])),
        Dimension("an x that requires no grad",
                  lambda c: c.target == "run_checkpointed" and not c.args[1].requires_grad),
        Dimension("blocks in eval mode", lambda c: c.target == "run_checkpointed" and not c.args[0].training),
        Dimension("one block", lambda c: c.target == "run_checkpointed" and len(c.args[0]) == 1),
        Dimension("blocks holding forward hooks and pre-hooks of the caller's", lambda c: c.target == "run_checkpointed"
                  and any(len(block._forward_hooks) > 0 for block in c.args[0])
                  and any(len(block._forward_pre_hooks) > 0 for block in c.args[0])),
        Dimension("blocks that recompute differently (backward must use the recomputation)",
                  reading="recomputed_gradient: the calls that backward makes double each block's input"),
    ],
    "state_dict_hook": [
        Dimension("prefix '' (the Encoder itself)", lambda c: c.target == "rename_fc" and c.args[2] == ""),
        Dimension("one level deep", lambda c: c.target == "rename_fc" and c.args[2].count(".") == 1),
        Dimension("two levels deep", lambda c: c.target == "rename_fc" and c.args[2].count(".") >= 2),
        Dimension("'fc' inside the prefix", lambda c: c.target == "rename_fc" and "fc" in c.args[2]),
        Dimension("a version-2 checkpoint", lambda c: c.target == "rename_fc"
                  and any(key.startswith(c.args[2] + "linear.") for key in c.args[1])),
        Dimension("another module's keys", lambda c: c.target == "rename_fc"
                  and any(not key.startswith(c.args[2]) for key in c.args[1])),
        Dimension("another module's own layer named fc", lambda c: c.target == "rename_fc" and c.args[2] != ""
                  and any(key.startswith("fc.") for key in c.args[1])),
        Dimension("a sibling's key with fc. right after the prefix's length (decoder.fc.weight beside 'encoder.')",
                  lambda c: c.target == "rename_fc" and c.args[2] != "" and any(
                      not key.startswith(c.args[2]) and key[len(c.args[2]):].startswith("fc.") for key in c.args[1])),
        Dimension("the prefix fc. (an Encoder that its parent names fc)",
                  lambda c: c.target == "rename_fc" and c.args[2] == "fc."),
        Dimension("a module name with characters special to regular expressions", lambda c: c.target == "rename_fc"
                  and any(char in c.args[2] for char in "()[]+*?")),
    ],
    "per_sample_grads": [
        Dimension("a batch of 1", lambda c: c.target == "per_sample_grads" and len(c.args[1]) == 1),
        Dimension("one input feature", lambda c: c.target == "per_sample_grads" and c.args[1].shape[1] == 1),
        Dimension("one output", lambda c: c.target == "per_sample_grads" and c.args[2].shape[1] == 1),
        Dimension("float64", lambda c: c.target == "per_sample_grads" and c.args[1].dtype == torch.float64),
        Dimension("an x that requires grad", lambda c: c.target == "per_sample_grads" and c.args[1].requires_grad),
        Dimension("a layer that holds hooks of its own", lambda c: c.target == "per_sample_grads"
                  and len(c.args[0]._forward_hooks) > 0 and len(c.args[0]._backward_hooks) > 0),
        Dimension("a weight.grad from before",
                  lambda c: c.target == "per_sample_grads" and c.args[0].weight.grad is not None),
    ],
    "compact_state_dict": [
        Dimension("prefix '' (the Smoother itself)", lambda c: c.target == "compact" and c.args[2] == ""),
        Dimension("two levels deep", lambda c: c.target == "compact" and c.args[2].count(".") >= 2),
        Dimension("another module's entries", lambda c: c.target == "compact"
                  and any(not key.startswith(c.args[2]) for key in c.args[1])),
        Dimension("another module's buffer named mask", lambda c: c.target == "compact" and c.args[2] != ""
                  and "mask" in c.args[1]),
        Dimension("a key that holds the prefix without starting with it", lambda c: c.target == "compact"
                  and c.args[2] != "" and any(c.args[2] in key and not key.startswith(c.args[2]) for key in c.args[1])),
        Dimension("float64 entries", lambda c: c.target == "compact"
                  and any(key.startswith(c.args[2]) and value.dtype == torch.float64
                          for key, value in c.args[1].items())),
        Dimension("state_dict(keep_vars=True): the module's own tensors as entries", lambda c: c.target == "compact"
                  and any(isinstance(value, nn.Parameter) for value in c.args[1].values())),
        Dimension("a Smoother that ran (calls > 0)", lambda c: c.target == "compact"
                  and any(key.endswith("calls") and int(value) > 0 for key, value in c.args[1].items())),
    ],
}
"""The answer cell's grade_id → the dimensions of its input space."""


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
    return [
        # "a tensor two operations save is counted twice" missed: each tensor counted once, by its id
        Wrong("saved_bytes_counts_each_tensor_once", MEMORY_HOOKS, "saved_bytes", _cell('''
            def saved_bytes(fn, *inputs):
                sizes = {}

                def pack(tensor):
                    sizes[id(tensor)] = tensor.numel() * tensor.element_size()
                    return tensor

                with saved_tensors_hooks(pack, lambda tensor: tensor):
                    fn(*inputs)
                return len(sizes), sum(sizes.values())
        '''), "saved_bytes of an MLP"),
        # bytes read as four per element, float32's size
        Wrong("saved_bytes_four_bytes_an_element", MEMORY_HOOKS, "saved_bytes", _cell('''
            def saved_bytes(fn, *inputs):
                sizes = []

                def pack(tensor):
                    sizes.append(tensor.numel() * 4)
                    return tensor

                with saved_tensors_hooks(pack, lambda tensor: tensor):
                    fn(*inputs)
                return len(sizes), sum(sizes)
        '''), "on float64"),
        # "saved for the backward pass" read as "the tensors that need a gradient": saved data that needs none is
        # skipped
        Wrong("saved_bytes_counts_what_requires_grad", MEMORY_HOOKS, "saved_bytes", _cell('''
            def saved_bytes(fn, *inputs):
                sizes = []

                def pack(tensor):
                    if tensor.requires_grad:
                        sizes.append(tensor.numel() * tensor.element_size())
                    return tensor

                with saved_tensors_hooks(pack, lambda tensor: tensor):
                    fn(*inputs)
                return len(sizes), sum(sizes)
        '''), "saved_bytes of a * b"),
        # "floating-point" read as the two dtypes of the example, float32 and float64: a bfloat16 tensor is kept as
        # it is
        Wrong("pack_half_knows_float32_and_float64", MEMORY_HOOKS, "half_precision", _cell('''
            def pack_half(tensor):
                if tensor.dtype in (torch.float32, torch.float64):
                    return tensor.dtype, tensor.to(torch.float16)
                return tensor.dtype, tensor


            def unpack_half(packed):
                dtype, stored = packed
                return stored.to(dtype)
        '''), "bfloat16"),
        # "(integer indices, booleans)" read as int64 and bool only: an int32 or uint8 tensor is converted to float16
        Wrong("pack_half_keeps_int64_and_bool_only", MEMORY_HOOKS, "half_precision", _cell('''
            def pack_half(tensor):
                if tensor.dtype in (torch.int64, torch.bool):
                    return tensor.dtype, tensor
                return tensor.dtype, tensor.to(torch.float16)


            def unpack_half(packed):
                dtype, stored = packed
                return stored.to(dtype)
        '''), "int32"),
        # the notebook's later advice (leave the parameters alone) taken into pack_half: a Parameter is stored in
        # float32
        Wrong("pack_half_leaves_parameters_alone", MEMORY_HOOKS, "half_precision", _cell('''
            def pack_half(tensor):
                if tensor.is_floating_point() and not isinstance(tensor, nn.Parameter):
                    return tensor.dtype, tensor.to(torch.float16)
                return tensor.dtype, tensor


            def unpack_half(packed):
                dtype, stored = packed
                return stored.to(dtype)
        '''), "nn.Parameter"),
        # "keep it in float16's range" read as clamping to float16's largest value: a value from 65520 on is stored
        # as 65504, where tensor.to(torch.float16) gives inf
        Wrong("pack_half_clamps_to_the_range", MEMORY_HOOKS, "half_precision", _cell('''
            def pack_half(tensor):
                if tensor.is_floating_point():
                    return tensor.dtype, tensor.clamp(-65504, 65504).to(torch.float16)
                return tensor.dtype, tensor


            def unpack_half(packed):
                dtype, stored = packed
                return stored.to(dtype)
        '''), "beyond float16's range"),
        # "a tensor autograd computed" taken as off limits: only tensors without a grad_fn (weights, inputs) are
        # halved, every activation is kept in float32
        Wrong("pack_half_keeps_the_activations", MEMORY_HOOKS, "half_precision", _cell('''
            def pack_half(tensor):
                if tensor.is_floating_point() and tensor.grad_fn is None:
                    return tensor.dtype, tensor.to(torch.float16)
                return tensor.dtype, tensor


            def unpack_half(packed):
                dtype, stored = packed
                return stored.to(dtype)
        '''), "activations and weights alike"),
        # checkpoint's RNG bookkeeping read as overhead for deterministic blocks: a block holding Dropout recomputes
        # with another mask in backward
        Wrong("run_checkpointed_without_the_rng_state", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks:
                    x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)
                return x
        '''), "blocks that draw random numbers in training mode"),
        # the RNG state read as needed only where a Dropout module is: a block drawing with F.dropout or randn_like
        # recomputes with other numbers in backward
        Wrong("run_checkpointed_rng_state_only_with_a_dropout_module", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks:
                    draws = any(isinstance(module, nn.Dropout) for module in block.modules())
                    x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=draws)
                return x
        '''), "blocks that draw random numbers in training mode"),
        # random numbers read as a training-time matter: the RNG state kept only for blocks in training mode
        Wrong("run_checkpointed_rng_state_only_in_training", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks:
                    x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=block.training)
                return x
        '''), "in eval mode (noise is still drawn)"),
        # the RNG state read as needed only where x's gradient is: kept only when x requires grad
        Wrong("run_checkpointed_rng_state_only_when_x_requires_grad", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks:
                    x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=x.requires_grad)
                return x
        '''), "on an x that requires no grad"),
        # the block's forward taken for the block: checkpoint(block.forward, h) skips the hooks that calling the block
        # runs
        Wrong("run_checkpointed_calls_forward", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                h = x
                for block in blocks:
                    h = checkpoint(block.forward, h, use_reentrant=False)
                return h
        '''), "hooks and pre-hooks"),
        # "what follows prefix" read as the key past len(prefix) characters, without checking that the key starts with
        # prefix: a sibling's decoder.fc.weight becomes encoder.linear.weight
        Wrong("rename_fc_slices_without_startswith", MEMORY_HOOKS, "state_dict_hook", _cell('''
            def rename_fc(module, state_dict, prefix, *rest):
                for key in list(state_dict.keys()):
                    after = key[len(prefix):]
                    if after.startswith("fc."):
                        state_dict[prefix + "linear." + after[3:]] = state_dict.pop(key)
        '''), "decoder.fc.bias"),
        # "each module of blocks" taken from children(), which lists a block that appears twice only once
        Wrong("run_checkpointed_over_children", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks.children():
                    x = checkpoint(block, x, use_reentrant=False)
                return x
        '''), "the same block twice"),
        # checkpointing read as worth it only where x needs a gradient: with an x that needs none, the blocks run
        # plainly
        Wrong("run_checkpointed_only_when_x_requires_grad", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks:
                    x = checkpoint(block, x, use_reentrant=False) if x.requires_grad else block(x)
                return x
        '''), "an x that requires no grad"),
        # checkpointing read as a training-time measure: blocks in eval mode run plainly
        Wrong("run_checkpointed_only_in_training", MEMORY_HOOKS, "checkpointing", _cell('''
            def run_checkpointed(blocks, x):
                for block in blocks:
                    x = checkpoint(block, x, use_reentrant=False) if block.training else block(x)
                return x
        '''), "eval mode"),
        # "fc." found by the key's second-to-last part, whatever the prefix: another module's fc is renamed too
        Wrong("rename_fc_by_the_keys_last_parts", MEMORY_HOOKS, "state_dict_hook", _cell('''
            def rename_fc(module, state_dict, prefix, *rest):
                for key in list(state_dict):
                    parts = key.split(".")
                    if len(parts) >= 2 and parts[-2] == "fc":
                        parts[-2] = "linear"
                        state_dict[".".join(parts)] = state_dict.pop(key)
        '''), "given ['encoder.fc.bias', 'encoder.fc.weight', 'fc.bias', 'fc.weight']"),
        # the rename as a regular expression built from prefix: a module name with a character special to regular
        # expressions (a ModuleDict key such as "enc(1)") no longer matches itself
        Wrong("rename_fc_by_a_pattern_of_the_prefix", MEMORY_HOOKS, "state_dict_hook", _cell('''
            import re


            def rename_fc(module, state_dict, prefix, *rest):
                for key in list(state_dict):
                    renamed = re.sub("^" + prefix + r"fc\\.", prefix + "linear.", key)
                    if renamed != key:
                        state_dict[renamed] = state_dict.pop(key)
        '''), "enc(1)"),
        # "what follows prefix" taken as what follows its last occurrence: an Encoder that its parent names fc (prefix
        # "fc.") has fc. again in its keys
        Wrong("rename_fc_splits_at_the_prefix", MEMORY_HOOKS, "state_dict_hook", _cell('''
            def rename_fc(module, state_dict, prefix, *rest):
                for key in [key for key in state_dict if key.startswith(prefix)]:
                    after = key.split(prefix)[-1] if prefix else key
                    if after.startswith("fc."):
                        state_dict[prefix + "linear." + after[len("fc."):]] = state_dict.pop(key)
        '''), "given ['fc.fc.bias', 'fc.fc.weight']"),
        # hooks removed by clearing the layer's hook dicts: a hook the caller had on the layer is removed too
        Wrong("per_sample_grads_clears_every_hook", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                kept = {}
                layer.register_forward_hook(lambda m, args, out: kept.__setitem__("x", args[0].detach()))
                layer.register_full_backward_hook(lambda m, gi, go: kept.__setitem__("g", go[0]))
                inputs = x.detach().requires_grad_()
                loss = F.mse_loss(layer(inputs), targets, reduction="sum")
                torch.autograd.grad(loss, inputs)
                layer._forward_hooks.clear()
                layer._backward_hooks.clear()
                return {"weight": torch.einsum("no,ni->noi", kept["g"], kept["x"]), "bias": kept["g"]}
        '''), "hook of its own after"),
        # the outer products written into a tensor made with torch.zeros, float32 whatever the layer's dtype
        Wrong("per_sample_grads_fills_a_float32_tensor", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                kept = {}
                with layer.register_forward_hook(lambda m, args, out: kept.__setitem__("x", args[0].detach())), \\
                        layer.register_full_backward_hook(lambda m, gi, go: kept.__setitem__("g", go[0])):
                    inputs = x.detach().requires_grad_()
                    torch.autograd.grad(F.mse_loss(layer(inputs), targets, reduction="sum"), inputs)
                weight = torch.zeros(len(x), *layer.weight.shape)
                for n in range(len(x)):
                    weight[n] = torch.outer(kept["g"][n], kept["x"][n])
                return {"weight": weight, "bias": kept["g"].clone()}
        '''), "float64"),
        # grad_output[0] squeezed "to drop the extra dimension": a batch of one, or one output, loses a dimension it
        # needs
        Wrong("per_sample_grads_squeezes_grad_output", MEMORY_HOOKS, "per_sample_grads", _cell('''
            def per_sample_grads(layer, x, targets):
                kept = {}
                with layer.register_forward_hook(lambda m, args, out: kept.__setitem__("x", args[0].detach())), \\
                        layer.register_full_backward_hook(lambda m, gi, go: kept.__setitem__("g", go[0].squeeze())):
                    inputs = x.detach().requires_grad_()
                    torch.autograd.grad(F.mse_loss(layer(inputs), targets, reduction="sum"), inputs)
                return {"weight": torch.einsum("no,ni->noi", kept["g"], kept["x"]), "bias": kept["g"]}
        '''), "raised RuntimeError: einsum()"),
        # "floating-point" read as float32, the dtype of the example: a float64 Smoother's entries stay float64
        Wrong("compact_converts_float32_only", MEMORY_HOOKS, "compact_state_dict", _cell('''
            def compact(module, state_dict, prefix, local_metadata):
                del state_dict[prefix + "mask"]
                for key, value in state_dict.items():
                    if key.startswith(prefix) and value.dtype == torch.float32:
                        state_dict[key] = value.to(torch.float16)
        '''), "float64"),
        # "the keys that start with prefix" tested as prefix occurring in the key: a module whose name ends with the
        # Smoother's has its entries converted too
        Wrong("compact_finds_the_prefix_anywhere", MEMORY_HOOKS, "compact_state_dict", _cell('''
            def compact(module, state_dict, prefix, local_metadata):
                del state_dict[prefix + "mask"]
                for key, value in state_dict.items():
                    if prefix in key and value.is_floating_point():
                        state_dict[key] = value.to(torch.float16)
        '''), "an entry of another module"),
        # each entry converted where it is, through .data: with state_dict(keep_vars=True) the entries are the module's
        # own Parameters, and the module itself is converted
        Wrong("compact_converts_each_entrys_data", MEMORY_HOOKS, "compact_state_dict", _cell('''
            def compact(module, state_dict, prefix, local_metadata):
                del state_dict[prefix + "mask"]
                for key, value in state_dict.items():
                    if key.startswith(prefix) and value.is_floating_point():
                        value.data = value.data.to(torch.float16)
        '''), "after state_dict(keep_vars=True)"),
    ]
