"""08_backward_puzzles: the input space of each exercise (what its text allows, :mod:`catalogues.input_space`) and its
wrong readings (:mod:`catalogues.wrong_readings`)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from catalogues.honest_answers import BACKWARD_PUZZLES, _cell
from catalogues.input_space import Call, Dimension
from catalogues.wrong_answers import Wrong, _with_backward


def _on(function: str, condition: Callable[..., bool]) -> Callable[[Call], bool]:
    """A condition on the inputs a Function's forward receives (as ``apply`` got them)."""
    return lambda call: call.target == f"{function}.forward" and bool(condition(*call.args))


def _broadcast_both_ways(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Each of x and y has a size-1 dimension where the other is longer (shapes lined up from the right)."""
    pairs = list(zip(reversed(x.shape), reversed(y.shape)))
    return any(a == 1 < b for a, b in pairs) and any(b == 1 < a for a, b in pairs)


def _ties(x: torch.Tensor, dim: int) -> bool:
    """Some row along ``dim`` has its maximum more than once."""
    return bool((x == x.amax(dim, keepdim=True)).sum(dim).max() > 1)


def _window_ties(x: torch.Tensor, kernel_size: int, stride: int) -> bool:
    windows = x.unfold(-1, kernel_size, stride)
    return kernel_size > 1 and bool((windows == windows.amax(-1, keepdim=True)).sum(-1).max() > 1)


def _dims(function: str, keepdim: bool | None = None) -> list[Dimension]:
    """Each negative dim of a 3-D x (without keepdim where the Function has one)."""
    def holds(dim: int) -> Callable[..., bool]:
        return lambda x, d, *rest: x.dim() == 3 and d == dim and (keepdim is None or rest[0] is keepdim)

    without = " without keepdim" if keepdim is False else ""
    return [Dimension(f"dim {dim} of a 3-D x{without}", _on(function, holds(dim))) for dim in (-3, -2, -1)]


_FLOAT32 = torch.float32
_OVERFLOWS = {torch.float64: 709.8, torch.float32: 88.8}  # where exp overflows

SPACE: dict[str, list[Dimension]] = {
    "mul": [
        Dimension("a 0-d y", _on("Mul", lambda x, y: y.dim() == 0)),
        Dimension("a y of one entry that is not 0-d", _on("Mul", lambda x, y: y.numel() == 1 and y.dim() > 0)),
        Dimension("x and y each broadcast along a size-1 dimension of its own",
                  _on("Mul", lambda x, y: _broadcast_both_ways(x, y))),
        Dimension("an x with two leading dimensions fewer than y", _on("Mul", lambda x, y: y.dim() - x.dim() >= 2)),
        Dimension("a y with fewer dimensions than x", _on("Mul", lambda x, y: 0 < y.dim() < x.dim())),
        Dimension("float32 inputs", _on("Mul", lambda x, y: x.dtype == _FLOAT32)),
    ],
    **{grade_id: [
        *_dims(function, keepdim=False),
        Dimension("dim 1 of a 3-D x with keepdim", _on(function, lambda x, d, k: x.dim() == 3 and d % 3 == 1 and k)),
        Dimension("a 3-D x whose dimensions all have one size (over 1), without keepdim",
                  _on(function, lambda x, d, k: x.dim() == 3 and len(set(x.shape)) == 1 and x.shape[0] > 1 and not k)),
        Dimension("a float32 x", _on(function, lambda x, d, k: x.dtype == _FLOAT32)),
    ] for grade_id, function in (("sum_dim", "SumDim"), ("mean_dim", "MeanDim"))},
    "where": [
        Dimension("a condition broadcast against x and y",
                  _on("Where", lambda c, x, y: c.shape != torch.broadcast_shapes(c.shape, x.shape, y.shape))),
        Dimension("a 0-d y", _on("Where", lambda c, x, y: y.dim() == 0)),
        Dimension("a y with fewer dimensions than the output, not 0-d",
                  _on("Where", lambda c, x, y: 0 < y.dim() < len(torch.broadcast_shapes(c.shape, x.shape, y.shape)))),
        Dimension("an x broadcast along a size-1 dimension",
                  _on("Where", lambda c, x, y: x.dim() == 2 and 1 in x.shape and x.numel() > 1)),
        Dimension("float32 x and y", _on("Where", lambda c, x, y: x.dtype == _FLOAT32)),
    ],
    "cumsum": [
        *_dims("Cumsum"),
        Dimension("dim 1 of a 3-D x", _on("Cumsum", lambda x, d: x.dim() == 3 and d == 1)),
        Dimension("a float32 x", _on("Cumsum", lambda x, d: x.dtype == _FLOAT32)),
    ],
    "max_dim": [
        *[Dimension(f"dim {dim} of a 3-D x with ties along it, without keepdim",
                    _on("MaxDim", lambda x, d, k, dim=dim: x.dim() == 3 and d == dim and not k and _ties(x, d)))
          for dim in range(-3, 3)],
        Dimension("ties along dim with keepdim", _on("MaxDim", lambda x, d, k: k and x.dim() == 3 and _ties(x, d))),
        Dimension("a float32 x with ties", _on("MaxDim", lambda x, d, k: x.dtype == _FLOAT32 and _ties(x, d))),
    ],
    "topk": [
        Dimension("a 1-d x", _on("TopK", lambda x, k: x.dim() == 1)),
        Dimension("a 3-d x", _on("TopK", lambda x, k: x.dim() == 3)),
        Dimension("k = 1", _on("TopK", lambda x, k: k == 1)),
        Dimension("k = x.shape[-1] > 1", _on("TopK", lambda x, k: k == x.shape[-1] > 1)),
        Dimension("a tie across the k-th place", _on("TopK", lambda x, k: k < x.shape[-1] and bool(
            (x.sort(-1, descending=True).values[..., k - 1] == x.sort(-1, descending=True).values[..., k]).any()))),
        Dimension("a float32 x", _on("TopK", lambda x, k: x.dtype == _FLOAT32)),
    ],
    "index_select": [
        *_dims("IndexSelect"),
        Dimension("dim 1 of a 3-D x", _on("IndexSelect", lambda x, d, i: x.dim() == 3 and d == 1)),
        Dimension("an index that repeats a position",
                  _on("IndexSelect", lambda x, d, i: i.unique().numel() < i.numel())),
        Dimension("a position no index selects", _on("IndexSelect", lambda x, d, i: i.unique().numel() < x.shape[d])),
        Dimension("a float32 x", _on("IndexSelect", lambda x, d, i: x.dtype == _FLOAT32)),
    ],
    "max_pool1d": [
        Dimension("overlapping windows (stride < kernel_size)", _on("MaxPool1d", lambda x, k, s: s < k)),
        Dimension("windows that tile (stride = kernel_size > 1)", _on("MaxPool1d", lambda x, k, s: s == k > 1)),
        Dimension("gaps between windows (stride > kernel_size)", _on("MaxPool1d", lambda x, k, s: s > k)),
        Dimension("windows that tile and the last entries in no window",
                  _on("MaxPool1d", lambda x, k, s: s == k and (x.shape[-1] - k) % s != 0)),
        Dimension("gaps between windows and the last entries in no window",
                  _on("MaxPool1d", lambda x, k, s: s > k and (x.shape[-1] - k) % s != 0)),
        Dimension("ties in a window", _on("MaxPool1d", lambda x, k, s: _window_ties(x, k, s))),
        Dimension("a float32 x with ties in a window",
                  _on("MaxPool1d", lambda x, k, s: x.dtype == _FLOAT32 and _window_ties(x, k, s))),
    ],
    "softmax": [
        *_dims("Softmax"),
        Dimension("float64 logits whose exp overflows", _on("Softmax", lambda x, d: x.dtype == torch.float64
                                                             and float(x.max()) > _OVERFLOWS[torch.float64])),
        Dimension("float32 logits whose exp overflows", _on("Softmax", lambda x, d: x.dtype == _FLOAT32
                                                             and float(x.max()) > _OVERFLOWS[_FLOAT32])),
    ],
    "logsumexp": [
        *_dims("LogSumExp", keepdim=False),
        Dimension("dim 1 of a 3-D x with keepdim", _on("LogSumExp", lambda x, d, k: x.dim() == 3 and d % 3 == 1 and k)),
        Dimension("float64 entries whose exp overflows", _on("LogSumExp", lambda x, d, k: x.dtype == torch.float64
                                                               and float(x.abs().max()) > _OVERFLOWS[torch.float64])),
        Dimension("float32 entries whose exp overflows", _on("LogSumExp", lambda x, d, k: x.dtype == _FLOAT32
                                                              and float(x.abs().max()) > _OVERFLOWS[_FLOAT32])),
    ],
    "cross_entropy": [
        Dimension("a batch of 1", _on("CrossEntropy", lambda logits, target: logits.shape[0] == 1)),
        Dimension("a batch where the last class is no row's target",
                  _on("CrossEntropy", lambda logits, target: int(target.max()) < logits.shape[1] - 1)),
        *[Dimension(f"{str(dtype)[6:]} logits whose exp overflows",
                    _on("CrossEntropy", lambda logits, target, dtype=dtype: logits.dtype == dtype
                        and float(logits.max()) > _OVERFLOWS[dtype]))
          for dtype in _OVERFLOWS],
    ],
    "layer_norm": [
        Dimension("a 1-d x", _on("LayerNorm", lambda x, w, b, eps: x.dim() == 1)),
        Dimension("D = 1", _on("LayerNorm", lambda x, w, b, eps: x.shape[-1] == 1)),
        Dimension("a 3-d x, its two leading dimensions over 1 (a view of grad_output merging them fails)",
                  _on("LayerNorm", lambda x, w, b, eps: x.dim() == 3 and x.shape[0] > 1 and x.shape[1] > 1)),
        Dimension("an eps other than 1e-5, in float32",
                  _on("LayerNorm", lambda x, w, b, eps: eps != 1e-5 and x.dtype == _FLOAT32)),
    ],
    "normalize": [
        *_dims("Normalize"),
        Dimension("a small x (a norm under 0.1)", _on("Normalize", lambda x, d: float(x.norm(dim=d).min()) < 0.1)),
        Dimension("a large x (entries over 100)", _on("Normalize", lambda x, d: float(x.abs().max()) > 100)),
        Dimension("a float32 x", _on("Normalize", lambda x, d: x.dtype == _FLOAT32)),
    ],
    "conv1d": [
        Dimension("a kernel as long as the signal", _on("Conv1d", lambda x, w: w.shape[2] == x.shape[2])),
        Dimension("a kernel of width 1", _on("Conv1d", lambda x, w: w.shape[2] == 1)),
        Dimension("a batch of 1", _on("Conv1d", lambda x, w: x.shape[0] == 1)),
        Dimension("one input channel", _on("Conv1d", lambda x, w: x.shape[1] == 1)),
        Dimension("one output channel", _on("Conv1d", lambda x, w: w.shape[0] == 1)),
        Dimension("float32 inputs", _on("Conv1d", lambda x, w: x.dtype == _FLOAT32)),
    ],
}
"""The answer cell's grade_id → the dimensions of its input space."""


def _puzzle(grade_id: str, body: str) -> str:
    return _with_backward(grade_id, body)


def readings() -> list[Wrong]:
    """Answers written after misreading an exercise's text, each failing its test cell."""
    return [
        # "also where y is broadcast or 0-d": 0-d handled as "y has one entry": a (1,) or (1, 1) y gets a 0-d gradient
        Wrong("mul_one_entry_taken_for_0_d", BACKWARD_PUZZLES, "mul", _puzzle("mul", '''
            x, y = ctx.saved_tensors
            grad_y = grad_output * x
            grad_y = grad_y.sum() if y.numel() == 1 else grad_y.sum_to_size(y.shape)
            return (grad_output * y).sum_to_size(x.shape), grad_y
        '''), "grad of input y: shape (1"),
        # broadcasting read as "at most one missing leading dimension", as in the examples ((4,) against (3, 4))
        Wrong("mul_one_leading_dimension_summed", BACKWARD_PUZZLES, "mul", _puzzle("mul", '''
            x, y = ctx.saved_tensors

            def reduce(grad, shape):
                if grad.dim() > len(shape):  # the dimension shape lacks in front
                    grad = grad.sum(0)
                for dim, size in enumerate(shape):
                    if size == 1 and grad.shape[dim] != 1:
                        grad = grad.sum(dim, keepdim=True)
                return grad

            return reduce(grad_output * y, x.shape), reduce(grad_output * x, y.shape)
        '''), "grad of input y: shape () expected"),
        # ctx.needs_input_grad used to skip work, y's gradient written under x's test (both always need one in the
        # examples)
        Wrong("mul_y_gradient_only_when_x_needs_one", BACKWARD_PUZZLES, "mul", _puzzle("mul", '''
            x, y = ctx.saved_tensors
            grad_x = grad_y = None
            if ctx.needs_input_grad[0]:
                grad_x = (grad_output * y).sum_to_size(x.shape)
                grad_y = (grad_output * x).sum_to_size(y.shape)
            return grad_x, grad_y
        '''), "x needing no gradient, as a frozen parameter"),
        # "save what backward needs" done on the class: each apply overwrites what an earlier graph's backward reads
        Wrong("mul_inputs_kept_on_the_class", BACKWARD_PUZZLES, "mul", _puzzle("mul", '''
            x, y = Mul.saved
            return (grad_output * y).sum_to_size(x.shape), (grad_output * x).sum_to_size(y.shape)
        ''').replace("ctx.save_for_backward(*inputs)", "Mul.saved = inputs"),
              "keep what backward needs on ctx"),
        # one gradient needed: computed in place in a contiguous copy of grad_output, which is grad_output itself
        # where it is contiguous already
        Wrong("mul_one_gradient_in_place_in_grad_output", BACKWARD_PUZZLES, "mul", _puzzle("mul", '''
            x, y = ctx.saved_tensors
            need_x, need_y = ctx.needs_input_grad
            if need_x and need_y:
                return (grad_output * y).sum_to_size(x.shape), (grad_output * x).sum_to_size(y.shape)
            g = grad_output.contiguous()
            if need_x:
                return g.mul_(y).sum_to_size(x.shape), None
            return None, g.mul_(x).sum_to_size(y.shape)
        '''), "changed grad_output in place"),
        # "dtype" read as the examples' float64: the gradients are built in float64 whatever the inputs are
        Wrong("mul_gradients_built_in_float64", BACKWARD_PUZZLES, "mul", _puzzle("mul", '''
            x, y = ctx.saved_tensors
            grad_x = torch.zeros(x.shape, dtype=torch.float64) + (grad_output * y).sum_to_size(x.shape)
            grad_y = torch.zeros(y.shape, dtype=torch.float64) + (grad_output * x).sum_to_size(y.shape)
            return grad_x, grad_y
        '''), "has dtype torch.float64, expected torch.float32"),
        # a negative dim made positive with the number of dimensions of grad_output, which keepdim=False made one fewer
        Wrong("sum_dim_negative_dim_from_grad_output", BACKWARD_PUZZLES, "sum_dim", _puzzle("sum_dim", '''
            dim = ctx.dim if ctx.dim >= 0 else ctx.dim + grad_output.dim()
            if not ctx.keepdim:
                grad_output = grad_output.unsqueeze(dim)
            return grad_output.expand(ctx.shape), None, None
        '''), "keepdim=False)"),
        # dim read from the shapes: the first dimension where grad_output and x differ in size (none: the last)
        Wrong("sum_dim_dim_found_by_comparing_shapes", BACKWARD_PUZZLES, "sum_dim", _puzzle("sum_dim", '''
            if not ctx.keepdim:
                sizes = list(grad_output.shape)
                dim = next((d for d, size in enumerate(sizes) if size != ctx.shape[d]), len(sizes))
                grad_output = grad_output.unsqueeze(dim)
            return grad_output.expand(ctx.shape), None, None
        '''), "grad of input x has the wrong values"),
        # x read as a matrix, as in the example: dim 0 sums the rows, any other dim the columns
        Wrong("sum_dim_rows_or_columns", BACKWARD_PUZZLES, "sum_dim", _puzzle("sum_dim", '''
            if not ctx.keepdim:
                grad_output = grad_output.unsqueeze(0 if ctx.dim == 0 else -1)
            return grad_output.expand(ctx.shape), None, None
        '''), "keepdim=False)"),
        # the same matrix reading for the mean: the count is the number of rows for dim 0, of columns otherwise
        Wrong("mean_dim_count_of_rows_or_columns", BACKWARD_PUZZLES, "mean_dim", _puzzle("mean_dim", '''
            if not ctx.keepdim:
                grad_output = grad_output.unsqueeze(ctx.dim)
            count = ctx.shape[0] if ctx.dim == 0 else ctx.shape[-1]
            return grad_output.expand(ctx.shape) / count, None, None
        '''), "grad of input x has the wrong values"),
        Wrong("mean_dim_dim_found_by_comparing_shapes", BACKWARD_PUZZLES, "mean_dim", _puzzle("mean_dim", '''
            if not ctx.keepdim:
                sizes = list(grad_output.shape)
                dim = next((d for d, size in enumerate(sizes) if size != ctx.shape[d]), len(sizes))
                grad_output = grad_output.unsqueeze(dim)
            return grad_output.expand(ctx.shape) / ctx.shape[ctx.dim], None, None
        '''), "grad of input x has the wrong values"),
        Wrong("mean_dim_built_in_float64", BACKWARD_PUZZLES, "mean_dim", _puzzle("mean_dim", '''
            if not ctx.keepdim:
                grad_output = grad_output.unsqueeze(ctx.dim)
            return torch.full(ctx.shape, 1 / ctx.shape[ctx.dim], dtype=torch.float64) * grad_output, None, None
        '''), "has dtype torch.float64, expected torch.float32"),
        # "y broadcast or 0-d" read as "y has fewer dimensions": only y's missing leading dimensions are summed
        Wrong("where_y_reduced_over_leading_dimensions_only", BACKWARD_PUZZLES, "where", _puzzle("where", '''
            (condition,) = ctx.saved_tensors
            zero = torch.zeros_like(grad_output)
            grad_x = torch.where(condition, grad_output, zero).sum_to_size(ctx.x_shape)
            grad_y = torch.where(condition, zero, grad_output)
            if grad_y.dim() > len(ctx.y_shape):
                grad_y = grad_y.sum(tuple(range(grad_y.dim() - len(ctx.y_shape))))
            return None, grad_x, grad_y
        '''), "grad of input y: shape"),
        # 0-d y read as "y has one entry": summed to a number; otherwise only the dimensions where y has size 1
        Wrong("where_y_summed_where_it_has_size_1", BACKWARD_PUZZLES, "where", _puzzle("where", '''
            (condition,) = ctx.saved_tensors
            zero = torch.zeros_like(grad_output)
            grad_x = torch.where(condition, grad_output, zero).sum_to_size(ctx.x_shape)
            grad_y = torch.where(condition, zero, grad_output)
            if len(ctx.y_shape) == 0:
                grad_y = grad_y.sum()
            else:
                for dim, size in enumerate(ctx.y_shape):
                    if size == 1:
                        grad_y = grad_y.sum(dim, keepdim=True)
            return None, grad_x, grad_y
        '''), "grad of input y: shape"),
        Wrong("where_mask_in_float64", BACKWARD_PUZZLES, "where", _puzzle("where", '''
            (condition,) = ctx.saved_tensors
            mask = condition.to(torch.float64)
            grad_x = (grad_output * mask).sum_to_size(ctx.x_shape)
            return None, grad_x, (grad_output * (1 - mask)).sum_to_size(ctx.y_shape)
        '''), "has dtype torch.float64, expected torch.float32"),
        # x read as a matrix: along dim 0 the columns are transposed into rows, any other dim is the last
        Wrong("cumsum_rows_or_columns", BACKWARD_PUZZLES, "cumsum", _puzzle("cumsum", '''
            grad = grad_output.transpose(0, 1) if ctx.dim == 0 else grad_output
            grad = grad.flip(-1).cumsum(-1).flip(-1)
            return (grad.transpose(0, 1) if ctx.dim == 0 else grad), None
        '''), "grad of input x has the wrong values"),
        # the suffix sums as a product with a triangular matrix of ones, made in the examples' float64
        Wrong("cumsum_triangular_matrix_in_float64", BACKWARD_PUZZLES, "cumsum", _puzzle("cumsum", '''
            size = grad_output.shape[ctx.dim]
            upper = torch.ones(size, size, dtype=torch.float64).tril()  # [j, i] = 1 where i <= j: output j holds x_i
            moved = grad_output.movedim(ctx.dim, -1)
            return (moved @ upper).movedim(-1, ctx.dim), None
        '''), "Cumsum.backward raised RuntimeError"),
        # a negative dim counted from a matrix's two dimensions
        Wrong("cumsum_negative_dim_of_a_matrix", BACKWARD_PUZZLES, "cumsum", _puzzle("cumsum", '''
            dim = ctx.dim if ctx.dim >= 0 else ctx.dim + 2
            return grad_output.flip(dim).cumsum(dim).flip(dim), None
        '''), "grad of input x has the wrong values"),
        # without keepdim, the removed dimension put back at the end, where it is in the example (dim 1 of a matrix)
        Wrong("max_dim_index_unsqueezed_at_the_end", BACKWARD_PUZZLES, "max_dim", _puzzle("max_dim", '''
            x, indices = ctx.saved_tensors
            if not ctx.keepdim:
                grad_values, indices = grad_values.unsqueeze(-1), indices.unsqueeze(-1)
            return torch.zeros_like(x).scatter(ctx.dim, indices, grad_values), None, None
        '''), "keepdim=False)"),
        Wrong("max_dim_negative_dim_from_grad_values", BACKWARD_PUZZLES, "max_dim", _puzzle("max_dim", '''
            x, indices = ctx.saved_tensors
            dim = ctx.dim if ctx.dim >= 0 else ctx.dim + grad_values.dim()
            if not ctx.keepdim:
                grad_values, indices = grad_values.unsqueeze(dim), indices.unsqueeze(dim)
            return torch.zeros_like(x).scatter(dim, indices, grad_values), None, None
        '''), "keepdim=False)"),
        Wrong("max_dim_zeros_in_float64", BACKWARD_PUZZLES, "max_dim", _puzzle("max_dim", '''
            x, indices = ctx.saved_tensors
            if not ctx.keepdim:
                grad_values, indices = grad_values.unsqueeze(ctx.dim), indices.unsqueeze(ctx.dim)
            zeros = torch.zeros(x.shape, dtype=torch.float64)
            return zeros.scatter(ctx.dim, indices, grad_values.to(torch.float64)), None, None
        '''), "has dtype torch.float64, expected torch.float32"),
        # "the last dimension" read as dim 1, the last of the example's matrix
        Wrong("topk_scatter_along_dim_1", BACKWARD_PUZZLES, "topk", _puzzle("topk", '''
            (indices,) = ctx.saved_tensors
            return grad_values.new_zeros(ctx.shape).scatter(1, indices, grad_values), None
        '''), "TopK.backward raised IndexError"),
        # rows numbered by hand, as for a matrix
        Wrong("topk_rows_indexed_by_hand", BACKWARD_PUZZLES, "topk", _puzzle("topk", '''
            (indices,) = ctx.saved_tensors
            grad = grad_values.new_zeros(ctx.shape)
            rows = torch.arange(ctx.shape[0]).unsqueeze(1)
            grad[rows, indices] = grad_values
            return grad, None
        '''), "TopK.backward raised IndexError"),
        Wrong("topk_zeros_in_float64", BACKWARD_PUZZLES, "topk", _puzzle("topk", '''
            (indices,) = ctx.saved_tensors
            zeros = torch.zeros(ctx.shape, dtype=torch.float64)
            return zeros.scatter(-1, indices, grad_values.to(torch.float64)), None
        '''), "has dtype torch.float64, expected torch.float32"),
        # x read as a matrix: dim 0 selects rows, any other dim columns
        Wrong("index_select_rows_or_columns", BACKWARD_PUZZLES, "index_select", _puzzle("index_select", '''
            (index,) = ctx.saved_tensors
            grad = grad_output.new_zeros(ctx.shape)
            for position, selected in enumerate(index.tolist()):
                if ctx.dim == 0:
                    grad[selected] += grad_output[position]
                else:
                    grad[:, selected] += grad_output[:, position]
            return grad, None, None
        '''), "IndexSelect.apply(x: ("),
        # the same sum as a product with a one-hot matrix, for a matrix x
        Wrong("index_select_one_hot_product", BACKWARD_PUZZLES, "index_select", _puzzle("index_select", '''
            (index,) = ctx.saved_tensors
            one_hot = F.one_hot(index, ctx.shape[ctx.dim]).to(grad_output.dtype)  # (len(index), size)
            if ctx.dim == 0:
                return one_hot.T @ grad_output, None, None
            return grad_output @ one_hot, None, None
        '''), "IndexSelect.apply(x: ("),
        Wrong("index_select_zeros_in_float64", BACKWARD_PUZZLES, "index_select", _puzzle("index_select", '''
            (index,) = ctx.saved_tensors
            zeros = torch.zeros(ctx.shape, dtype=torch.float64)
            return zeros.index_add(ctx.dim, index, grad_output.to(torch.float64)), None, None
        '''), "has dtype torch.float64, expected torch.float32"),
        Wrong("max_pool1d_zeros_in_float64", BACKWARD_PUZZLES, "max_pool1d", _puzzle("max_pool1d", '''
            (indices,) = ctx.saved_tensors
            zeros = torch.zeros(ctx.shape, dtype=torch.float64)
            return zeros.scatter_add(-1, indices, grad_output.to(torch.float64)), None, None
        '''), "has dtype torch.float64, expected torch.float32"),
        # the signal's length read from the windows: the last one ends where the signal does
        Wrong("max_pool1d_length_from_the_last_window", BACKWARD_PUZZLES, "max_pool1d", _cell('''
            class MaxPool1d(Function):
                @staticmethod
                def forward(x, kernel_size, stride):
                    output, indices = F.max_pool1d(x, kernel_size, stride, return_indices=True)
                    return output, indices

                @staticmethod
                def setup_context(ctx, inputs, output):
                    pooled, indices = output
                    ctx.mark_non_differentiable(indices)
                    ctx.save_for_backward(indices)
                    ctx.kernel_size, ctx.stride = inputs[1], inputs[2]

                @staticmethod
                def backward(ctx, grad_output, grad_indices):
                    (indices,) = ctx.saved_tensors
                    length = (grad_output.shape[-1] - 1) * ctx.stride + ctx.kernel_size
                    grad = grad_output.new_zeros(*grad_output.shape[:-1], length)
                    return grad.scatter_add(-1, indices, grad_output), None, None
        '''), "grad of input x: shape"),
        # windows that do not overlap (stride = kernel_size) taken as tiling the signal: max_unpool1d, whose default
        # length ends with the last window
        Wrong("max_pool1d_unpooled_when_windows_tile", BACKWARD_PUZZLES, "max_pool1d", _cell('''
            class MaxPool1d(Function):
                @staticmethod
                def forward(x, kernel_size, stride):
                    output, indices = F.max_pool1d(x, kernel_size, stride, return_indices=True)
                    return output, indices

                @staticmethod
                def setup_context(ctx, inputs, output):
                    pooled, indices = output
                    ctx.mark_non_differentiable(indices)
                    ctx.save_for_backward(indices)
                    ctx.shape, ctx.kernel_size, ctx.stride = inputs[0].shape, inputs[1], inputs[2]

                @staticmethod
                def backward(ctx, grad_output, grad_indices):
                    (indices,) = ctx.saved_tensors
                    if ctx.kernel_size == ctx.stride:  # each entry in one window at most: put each gradient back
                        return F.max_unpool1d(grad_output, indices, ctx.kernel_size, ctx.stride), None, None
                    return grad_output.new_zeros(ctx.shape).scatter_add(-1, indices, grad_output), None, None
        '''), "grad of input x: shape"),
        # softmax's output recomputed from x, as the formula reads (exp over the sum of exps), x saved instead of y
        Wrong("softmax_recomputed_without_subtracting_the_maximum", BACKWARD_PUZZLES, "softmax", _cell('''
            class Softmax(Function):
                @staticmethod
                def forward(x, dim):
                    return x.softmax(dim)

                @staticmethod
                def setup_context(ctx, inputs, output):
                    ctx.save_for_backward(inputs[0])
                    ctx.dim = inputs[1]

                @staticmethod
                def backward(ctx, grad_output):
                    (x,) = ctx.saved_tensors
                    y = x.exp() / x.exp().sum(ctx.dim, keepdim=True)
                    return y * (grad_output - (grad_output * y).sum(ctx.dim, keepdim=True)), None
        '''), "grad of input x is nan"),
        Wrong("softmax_rows_or_columns", BACKWARD_PUZZLES, "softmax", _puzzle("softmax", '''
            (y,) = ctx.saved_tensors
            dim = 0 if ctx.dim == 0 else -1
            return y * (grad_output - (grad_output * y).sum(dim, keepdim=True)), None
        '''), "grad of input x has the wrong values"),
        Wrong("softmax_sum_in_float64", BACKWARD_PUZZLES, "softmax", _puzzle("softmax", '''
            (y,) = ctx.saved_tensors
            total = (grad_output * y).sum(ctx.dim, keepdim=True, dtype=torch.float64)
            return y * (grad_output - total), None
        '''), "has dtype torch.float64, expected torch.float32"),
        Wrong("logsumexp_negative_dim_from_grad_output", BACKWARD_PUZZLES, "logsumexp", _puzzle("logsumexp", '''
            x, output = ctx.saved_tensors
            dim = ctx.dim if ctx.dim >= 0 else ctx.dim + grad_output.dim()
            if not ctx.keepdim:
                grad_output, output = grad_output.unsqueeze(dim), output.unsqueeze(dim)
            return grad_output * torch.exp(x - output), None, None
        '''), "keepdim=False)"),
        # exp(x_j) / Σ exp(x) as written, with Σ exp(x) = exp(out): both overflow together
        Wrong("logsumexp_exp_over_exp_of_the_output", BACKWARD_PUZZLES, "logsumexp", _puzzle("logsumexp", '''
            x, output = ctx.saved_tensors
            if not ctx.keepdim:
                grad_output, output = grad_output.unsqueeze(ctx.dim), output.unsqueeze(ctx.dim)
            return grad_output * x.exp() / output.exp(), None, None
        '''), "LogSumExp.apply(x: ("),
        Wrong("logsumexp_rows_or_columns", BACKWARD_PUZZLES, "logsumexp", _puzzle("logsumexp", '''
            x, output = ctx.saved_tensors
            if not ctx.keepdim:
                dim = 0 if ctx.dim == 0 else -1
                grad_output, output = grad_output.unsqueeze(dim), output.unsqueeze(dim)
            return grad_output * torch.exp(x - output), None, None
        '''), "LogSumExp.apply(x: ("),
        # the one-hot part from F.one_hot(target), whose width is the largest target + 1, not the number of classes
        Wrong("cross_entropy_one_hot_as_wide_as_the_targets", BACKWARD_PUZZLES, "cross_entropy", _puzzle(
            "cross_entropy", '''
            logits, target = ctx.saved_tensors
            grad = logits.softmax(1) - F.one_hot(target).to(logits.dtype)
            return grad * grad_output / len(target), None
        '''), "CrossEntropy.apply(logits: ("),
        # softmax written out as exp over the sum of exps, without subtracting the row's maximum
        Wrong("cross_entropy_softmax_without_subtracting_the_maximum", BACKWARD_PUZZLES, "cross_entropy", _puzzle(
            "cross_entropy", '''
            logits, target = ctx.saved_tensors
            grad = logits.exp() / logits.exp().sum(1, keepdim=True)
            grad[torch.arange(len(target)), target] -= 1
            return grad * grad_output / len(target), None
        '''), "grad of input logits is nan"),
        Wrong("cross_entropy_one_hot_in_float64", BACKWARD_PUZZLES, "cross_entropy", _puzzle("cross_entropy", '''
            logits, target = ctx.saved_tensors
            one_hot = F.one_hot(target, logits.shape[1]).to(torch.float64)
            return (logits.softmax(1) - one_hot) * grad_output / len(target), None
        '''), "has dtype torch.float64, expected torch.float32"),
        # "the eps it is given" overlooked: the example's 1e-5 written in
        Wrong("layer_norm_eps_of_the_example", BACKWARD_PUZZLES, "layer_norm", _puzzle("layer_norm", '''
            x, weight = ctx.saved_tensors
            mean = x.mean(-1, keepdim=True)
            rstd = (x.var(-1, correction=0, keepdim=True) + 1e-5).rsqrt()
            x_hat = (x - mean) * rstd
            width = x.shape[-1]
            g = grad_output * weight
            grad_x = rstd * (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True))
            return grad_x, (grad_output * x_hat).reshape(-1, width).sum(0), grad_output.reshape(-1, width).sum(0), None
        '''), "has the wrong values"),
        # "flatten the rows" written with .view: right for a grad_output laid out as the output, an error for one
        # that is not contiguous (the output used through a transpose)
        Wrong("layer_norm_views_grad_output", BACKWARD_PUZZLES, "layer_norm", _puzzle("layer_norm", '''
            x, weight = ctx.saved_tensors
            mean = x.mean(-1, keepdim=True)
            rstd = (x.var(-1, correction=0, keepdim=True) + ctx.eps).rsqrt()
            x_hat = (x - mean) * rstd
            width = x.shape[-1]
            g = grad_output * weight
            grad_x = rstd * (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True))
            return grad_x, (grad_output * x_hat).view(-1, width).sum(0), grad_output.view(-1, width).sum(0), None
        '''), "view size is not compatible"),
        # x's gradient computed with the parameters' shared terms, under their test: a frozen LayerNorm gives x none
        Wrong("layer_norm_x_gradient_only_with_a_parameter_s", BACKWARD_PUZZLES, "layer_norm", _puzzle("layer_norm", '''
            x, weight = ctx.saved_tensors
            grad_x = grad_weight = grad_bias = None
            if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
                mean = x.mean(-1, keepdim=True)
                rstd = (x.var(-1, correction=0, keepdim=True) + ctx.eps).rsqrt()
                x_hat = (x - mean) * rstd
                width = x.shape[-1]
                g = grad_output * weight
                grad_x = rstd * (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True))
                grad_weight = (grad_output * x_hat).reshape(-1, width).sum(0)
                grad_bias = grad_output.reshape(-1, width).sum(0)
            return grad_x, grad_weight, grad_bias, None
        '''), "weight and bias needing no gradient"),
        # eps added to the standard deviation rather than to the variance
        Wrong("layer_norm_eps_added_to_the_deviation", BACKWARD_PUZZLES, "layer_norm", _puzzle("layer_norm", '''
            x, weight = ctx.saved_tensors
            mean = x.mean(-1, keepdim=True)
            rstd = 1 / (x.var(-1, correction=0, keepdim=True).sqrt() + ctx.eps)
            x_hat = (x - mean) * rstd
            width = x.shape[-1]
            g = grad_output * weight
            grad_x = rstd * (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True))
            return grad_x, (grad_output * x_hat).reshape(-1, width).sum(0), grad_output.reshape(-1, width).sum(0), None
        '''), "has the wrong values"),
        # "summed over all rows" read as over dim 0, the rows of the example's matrix
        Wrong("layer_norm_weight_summed_over_dim_0", BACKWARD_PUZZLES, "layer_norm", _puzzle("layer_norm", '''
            x, weight = ctx.saved_tensors
            mean = x.mean(-1, keepdim=True)
            rstd = (x.var(-1, correction=0, keepdim=True) + ctx.eps).rsqrt()
            x_hat = (x - mean) * rstd
            g = grad_output * weight
            grad_x = rstd * (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True))
            return grad_x, (grad_output * x_hat).sum(0), grad_output.sum(0), None
        '''), "grad of input weight: shape"),
        Wrong("normalize_rows_or_columns", BACKWARD_PUZZLES, "normalize", _puzzle("normalize", '''
            (x,) = ctx.saved_tensors
            dim = 0 if ctx.dim == 0 else -1
            norm = x.norm(dim=dim, keepdim=True)
            y = x / norm
            return (grad_output - y * (grad_output * y).sum(dim, keepdim=True)) / norm, None
        '''), "grad of input x has the wrong values"),
        # the norm "kept away from 0" with an eps under the square root, as many implementations do
        Wrong("normalize_eps_under_the_root", BACKWARD_PUZZLES, "normalize", _puzzle("normalize", '''
            (x,) = ctx.saved_tensors
            norm = ((x * x).sum(ctx.dim, keepdim=True) + 1e-6).sqrt()
            y = x / norm
            return (grad_output - y * (grad_output * y).sum(ctx.dim, keepdim=True)) / norm, None
        '''), "grad of input x has the wrong values"),
        Wrong("normalize_norm_in_float64", BACKWARD_PUZZLES, "normalize", _puzzle("normalize", '''
            (x,) = ctx.saved_tensors
            norm = torch.linalg.vector_norm(x, dim=ctx.dim, keepdim=True, dtype=torch.float64)
            y = x / norm
            return (grad_output - y * (grad_output * y).sum(ctx.dim, keepdim=True)) / norm, None
        '''), "has dtype torch.float64, expected torch.float32"),
        # the kernel's taps taken as slices k:k+1 and squeezed, which also drops a channel count of 1
        Wrong("conv1d_taps_squeezed", BACKWARD_PUZZLES, "conv1d", _puzzle("conv1d", '''
            x, weight = ctx.saved_tensors
            kernel, length = weight.shape[2], grad_output.shape[2]
            grad_weight = torch.einsum("nol,nclk->ock", grad_output, x.unfold(2, kernel, 1))
            grad_x = torch.zeros_like(x)
            for k in range(kernel):
                tap = weight[:, :, k : k + 1].squeeze()  # (O, C)
                grad_x[:, :, k : k + length] += torch.einsum("nol,oc->ncl", grad_output, tap)
            return grad_x, grad_weight
        '''), "Conv1d.backward raised RuntimeError"),
        Wrong("conv1d_zeros_in_float64", BACKWARD_PUZZLES, "conv1d", _puzzle("conv1d", '''
            x, weight = ctx.saved_tensors
            kernel, length = weight.shape[2], grad_output.shape[2]
            grad_weight = torch.einsum("nol,nclk->ock", grad_output, x.unfold(2, kernel, 1))
            grad_x = torch.zeros(x.shape, dtype=torch.float64)
            for k in range(kernel):
                grad_x[:, :, k : k + length] += torch.einsum("nol,oc->ncl", grad_output, weight[:, :, k])
            return grad_x, grad_weight
        '''), "has dtype torch.float64, expected torch.float32"),
        # the windows of x unfolded once, under the test for x's gradient, and the weight's gradient computed there
        Wrong("conv1d_both_gradients_under_x_s_test", BACKWARD_PUZZLES, "conv1d", _puzzle("conv1d", '''
            x, weight = ctx.saved_tensors
            kernel, length = weight.shape[2], grad_output.shape[2]
            grad_x = grad_weight = None
            if ctx.needs_input_grad[0]:
                grad_weight = torch.einsum("nol,nclk->ock", grad_output, x.unfold(2, kernel, 1))
                grad_x = torch.zeros_like(x)
                for k in range(kernel):
                    grad_x[:, :, k : k + length] += torch.einsum("nol,oc->ncl", grad_output, weight[:, :, k])
            return grad_x, grad_weight
        '''), "weight.grad through autograd's engine as in a model"),
        # the batch read as the examples' several signals: the batch dimension squeezed away with the rest
        Wrong("conv1d_grad_output_squeezed", BACKWARD_PUZZLES, "conv1d", _puzzle("conv1d", '''
            x, weight = ctx.saved_tensors
            kernel, length = weight.shape[2], grad_output.shape[2]
            windows = x.unfold(2, kernel, 1)  # (N, C, L_out, K)
            grad_weight = torch.einsum("nol,nclk->ock", grad_output, windows)
            grad_x = torch.zeros_like(x)
            for position in range(length):
                step = grad_output[:, :, position].squeeze()  # (N, O)
                grad_x[:, :, position : position + kernel] += torch.einsum("no,ock->nck", step, weight)
            return grad_x, grad_weight
        '''), "Conv1d.backward raised RuntimeError"),
    ]
