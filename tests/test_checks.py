"""Unit tests of hooklab.checks: every checker passes right answers and names what is wrong."""

from __future__ import annotations

import functools
import linecache
import re
import threading

import numpy as np
import pytest
import torch
from torch import nn

from hooklab.checks import (
    AnswerError,
    calling,
    check_answer,
    check_backward,
    check_equal,
    check_names,
    check_no_hooks_left,
    check_no_model_run,
    check_parameter,
    check_tensor,
    random_generator,
)


@pytest.fixture
def refs() -> dict[str, torch.Tensor]:
    x1 = torch.tensor([0.25])
    x2 = torch.tensor([0.5])
    return {"x1": x1, "x2": x2, "output": x1 + x2}


def fails_with(message: str):
    return pytest.raises(AnswerError, match=message)


# check_answer -----------------------------------------------------------------------------


def test_answer_passes_same_objects_and_equal_values(refs):
    check_answer(list(refs.values()), refs, same_object=True)
    check_answer([t.clone() for t in refs.values()], refs)
    check_answer(tuple(refs.values()), refs)


def test_answer_must_be_a_list(refs):
    with fails_with(r"^answer is a tensor of shape \(1,\), expected a list \[x1, x2, output\]$"):
        check_answer(refs["x1"], refs)


def test_answer_length(refs):
    with fails_with(r"^answer has 2 items, expected 3: \[x1, x2, output\]$"):
        check_answer([refs["x1"], refs["x2"]], refs)
    with fails_with(r"^answer has 1 item, expected 3"):
        check_answer([refs["x1"]], refs)


def test_answer_item_equal_to_another_reference(refs):
    with fails_with(r"^answer\[1\] should be x2; got a tensor equal to x1$"):
        check_answer([refs["x1"], refs["x1"], refs["output"]], refs)


def test_answer_item_python_float(refs):
    with fails_with(r"^answer\[0\] \(x1\) is a float, expected a tensor of shape \(1,\)$"):
        check_answer([0.25, refs["x2"], refs["output"]], refs)


def test_answer_item_numpy_array(refs):
    with fails_with(r"^answer\[2\] \(output\) is a numpy.ndarray, expected a tensor of shape \(1,\)$"):
        check_answer([refs["x1"], refs["x2"], np.array([0.75])], refs)


def test_answer_item_shape(refs):
    with fails_with(r"^answer\[2\] \(output\): shape \(1,\) expected, got \(2,\)$"):
        check_answer([refs["x1"], refs["x2"], torch.tensor([0.75, 0.75])], refs)


def test_answer_item_dtype_strict_unless_relaxed(refs):
    as_double = [t.double() for t in refs.values()]
    with fails_with(r"^answer\[0\] \(x1\) has dtype torch.float64, expected torch.float32$"):
        check_answer(as_double, refs)
    check_answer(as_double, refs, check_dtype=False)


def test_answer_item_wrong_values(refs):
    with fails_with(r"^answer\[2\] \(output\) has the wrong values: 0.8 instead of 0.75 at index \(0,\)$"):
        check_answer([refs["x1"], refs["x2"], torch.tensor([0.8])], refs)


def test_answer_same_object_rejects_copies_and_swaps(refs):
    x1, x2, output = refs.values()
    with fails_with(r"^answer\[0\] should be x1 itself; got a copy with the same values"):
        check_answer([x1.clone(), x2, output], refs, same_object=True)
    with fails_with(r"^answer\[0\] should be x1; got a tensor equal to x2$"):
        check_answer([x2, x1, output], refs, same_object=True)
    with fails_with(r"^answer\[2\] \(output\) has the wrong values: 9 instead of 0.75 at index \(0,\)$"):
        check_answer([x1, x2, torch.tensor([9.0])], refs, same_object=True)


# check_tensor -----------------------------------------------------------------------------


def test_tensor_passes_within_tolerance():
    check_tensor(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
    check_tensor(torch.tensor([float("inf")]), torch.tensor([float("inf")]))


def test_a_nan_matches_nothing_not_even_an_expected_nan():
    """An expectation computed from the answer's own parameters is nan when they are: no test expects a nan."""
    with fails_with(r"^answer is nan at index \(1,\), where a number is expected"):
        check_tensor(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, float("nan")]))


def test_tensor_reports_multi_dimensional_index():
    expected = torch.zeros(2, 3)
    actual = expected.clone()
    actual[1, 2] = 1.0
    with fails_with(r"^grad has the wrong values: 1 instead of 0 at index \(1, 2\) \(1 of 6 entries wrong\)$"):
        check_tensor(actual, expected, "grad")


def test_tensor_scalar_has_no_index():
    with fails_with(r"^count has the wrong values: 3 instead of 4$"):
        check_tensor(torch.tensor(3), torch.tensor(4), "count")


def test_two_values_that_differ_never_print_alike():
    """Shown with six significant digits, 0.8396943 and 0.8396941 read "0.839694 instead of 0.839694": a value is shown
    with as many more digits as it takes to tell the two apart, and with six where six do."""
    got, want = torch.tensor([0.8396943], dtype=torch.float64), torch.tensor([0.8396941], dtype=torch.float64)
    with fails_with(r"^grad has the wrong values: 0.8396943 instead of 0.8396941 at index \(0,\)$"):
        check_tensor(got, want, "grad", atol=1e-9, rtol=1e-9)
    with fails_with(r"^x has the wrong values: 1.0000001 instead of 1$"):
        check_tensor(torch.tensor(1.0000001, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64), "x",
                     atol=0, rtol=0)
    with fails_with(r"^x has the wrong values: 0.123457 instead of 0.5$"):
        check_tensor(torch.tensor(0.123456789, dtype=torch.float64), torch.tensor(0.5, dtype=torch.float64), "x")


def test_a_distributions_statistic_prints_outside_the_range_it_missed():
    """A mean of 0.05004 for 0 ± 0.05, shown with three digits, reads "mean 0.05, expected 0 ± 0.05": inside the range.
    Each statistic is shown with the digits it takes for the number printed to miss the range too."""
    from hooklab.observations import distribution_problem

    signs, mean = np.array([1.0, -1.0] * 500), {"mean": 0.0, "mean_atol": 0.05}
    assert distribution_problem(signs + 0.05004, "w", mean) == "w: mean 0.05004, expected 0 ± 0.05"
    assert distribution_problem(signs + 0.3, "w", mean) == "w: mean 0.3, expected 0 ± 0.05"
    assert distribution_problem(np.array([0.57736, 0.1]), "w", {"bound": 0.57735}) == (
        "w: a value of 0.57736 lies outside ±0.57735")
    ones = np.array([1.0, -1.0] * 50_000) * 1.05001  # standard deviation 1.0500152 (ddof=1)
    assert distribution_problem(ones, "w", {"std": 1.0, "std_rtol": 0.05}) == (
        "w: standard deviation 1.05002, expected 1 (± 5%)")


def test_tensor_rejects_none():
    with fails_with(r"^weight.grad is None, expected a tensor of shape \(1,\)$"):
        check_tensor(None, torch.zeros(1), "weight.grad")


def test_parameter_is_accepted_as_tensor():
    check_tensor(nn.Parameter(torch.ones(2)), torch.ones(2))


# cheats: patched comparisons and tensor subclasses ------------------------------------------


def test_patched_torch_comparisons_do_not_fool_the_checker(monkeypatch, refs):
    monkeypatch.setattr(torch, "allclose", lambda *args, **kwargs: True)
    monkeypatch.setattr(torch, "equal", lambda *args, **kwargs: True)
    monkeypatch.setattr(torch, "isclose", lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool))
    monkeypatch.setattr(torch.Tensor, "__eq__", lambda self, other: True)
    with fails_with(r"wrong values: 9 instead of 0.75"):
        check_answer([refs["x1"], refs["x2"], torch.tensor([9.0])], refs)


def test_tensor_subclass_is_rejected(refs):
    class EqualsAnything(torch.Tensor):
        def __eq__(self, other):
            return True

    sneaky = torch.tensor([9.0]).as_subclass(EqualsAnything)
    with fails_with(r"^answer\[2\] \(output\) is a torch.Tensor subclass \(.*EqualsAnything\), expected a tensor of "
                    r"shape \(1,\)$"):
        check_answer([refs["x1"], refs["x2"], sneaky], refs)


# check_names ------------------------------------------------------------------------------


def test_names_pass():
    check_names(iter(["a", "b"]), ["a", "b"], "named_parameters()")


def test_names_missing_unexpected_and_order():
    with fails_with(r"^named_parameters\(\) is missing 'b'; got \['a'\]$"):
        check_names(["a"], ["a", "b"], "named_parameters()")
    with fails_with(r"^named_parameters\(\) has unexpected 'c'; expected \['a', 'b'\]$"):
        check_names(["a", "b", "c"], ["a", "b"], "named_parameters()")
    with fails_with(r"^named_parameters\(\) has the right names in the wrong order"):
        check_names(["b", "a"], ["a", "b"], "named_parameters()")


# check_parameter --------------------------------------------------------------------------


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(2, 3))
        self.plain = torch.zeros(2, requires_grad=True)


def test_parameter_passes():
    check_parameter(Holder(), "weight", (2, 3))


def test_parameter_missing_plain_and_shape():
    holder = Holder()
    with fails_with(r"^Holder has no attribute 'bias'$"):
        check_parameter(holder, "bias", (2,))
    with fails_with(r"^Holder.plain is a torch.Tensor, not an nn.Parameter: parameters\(\)"):
        check_parameter(holder, "plain", (2,))
    with fails_with(r"^Holder.weight: shape \(3, 2\) expected, got \(2, 3\)$"):
        check_parameter(holder, "weight", (3, 2))


def test_parameter_not_registered():
    holder = Holder()
    object.__setattr__(holder, "stray", nn.Parameter(torch.zeros(1)))
    with fails_with(r"^Holder.stray is a Parameter but is not registered on the module$"):
        check_parameter(holder, "stray", (1,))


# check_equal ------------------------------------------------------------------------------


def test_equal_passes_and_fails():
    check_equal("Scale(factor=2.5)", "Scale(factor=2.5)", "repr")
    with fails_with(r"^repr should be 'a', got 'b'$"):
        check_equal("b", "a", "repr")
    with fails_with(r"^count is a float, expected an int$"):
        check_equal(3.0, 3, "count")
    with fails_with(r"^repr differs.\nexpected:\nA\(\n\)\ngot:\nB\(\n\)$"):
        check_equal("B(\n)", "A(\n)", "repr")


def test_check_equal_compares_types_all_the_way_down_as_the_grader_does():
    """True == 1 and 1.0 == 1, but the grader compares encoded values by type too: so does the check in the kernel."""
    counts = {"forward hook": 2, "tensor hook": 1}
    check_equal({"forward hook": 2, "tensor hook": 1}, counts, "predict_fires('aba', 'backward')")
    with fails_with(r"^predict_fires\('aba', 'backward'\)\['tensor hook'\] is a bool, expected an int$"):
        check_equal({"forward hook": 2, "tensor hook": True}, counts, "predict_fires('aba', 'backward')")
    with fails_with(r"^shapes should be \[\[1\], \[2\]\], got \[\[1\], \(2,\)\]$"):  # a tuple is never equal to a list
        check_equal([[1], (2,)], [[1], [2]], "shapes")
    with fails_with(r"^found\[0\]\[1\] is a float, expected an int$"):
        check_equal([("a", 1.0)], [("a", 1)], "found")
    with fails_with(r"^counts: the key True is a bool, expected an int$"):
        check_equal({True: "x"}, {1: "x"}, "counts")
    with fails_with(r"^found should be \('3', 'forward'\), got \('3', None\)$"):  # values that differ: by value
        check_equal(("3", None), ("3", "forward"), "found")
    check_equal(("3", "backward"), ("3", "backward"), "found")


# check_no_model_run -----------------------------------------------------------------------


def _fires(uses: int) -> dict[str, int]:
    """A model run that counts hooks, as 09's `fires` does."""
    layer, counts = nn.Linear(2, 2), {"forward hook": 0, "tensor hook": 0}
    layer.register_forward_hook(lambda *args: counts.__setitem__("forward hook", counts["forward hook"] + 1))
    layer.weight.register_hook(lambda grad: counts.__setitem__("tensor hook", counts["tensor hook"] + 1))
    h = torch.randn(1, 2, requires_grad=True)
    for _ in range(uses):
        h = layer(h)
    h.sum().backward()
    return counts


def _in_map_callback(uses):
    box, t = [], torch.zeros(1)
    t.map_(t, lambda a, b: (box.append(_fires(uses)), 0.0)[1])  # a callback from inside an operator: no mode sees it
    return box[0]


def _on_another_thread(uses):
    box = []
    thread = threading.Thread(target=lambda: box.append(_fires(uses)))
    thread.start()
    thread.join()
    return box[0]


def _extrapolated(uses):
    one, two = _fires(1), _fires(2)  # small runs, a line through them
    return {kind: one[kind] + (two[kind] - one[kind]) * (uses - 1) for kind in one}


def _identity_modules(uses):
    module, count = nn.Identity(), []
    module.register_forward_hook(lambda *args: count.append(1))
    for _ in range(uses):
        module(torch.zeros(1))  # no operator at all: the module hook sees it
    return {"forward hook": len(count), "tensor hook": 1}


def _dispatch_mode_popped(uses):
    from torch.utils._python_dispatch import _pop_mode, _push_mode

    mode = _pop_mode()
    try:
        return _fires(uses)
    finally:
        _push_mode(mode)


def _thread_left_running(uses):
    counts = {"forward hook": 0, "tensor hook": 0}
    done = threading.Event()
    thread = threading.Thread(target=lambda: (done.wait(5), counts.update({"forward hook": uses})))  # fills it later
    thread.start()
    _thread_left_running.done, _thread_left_running.thread = done, thread
    return counts


@pytest.mark.parametrize(("run", "message"), [
    (_fires, r"runs a backward pass \(autograd's engine ran SumBackward0\)"),
    (_in_map_callback, r"runs a backward pass"),
    (_on_another_thread, r"runs a backward pass"),
    (_extrapolated, r"runs a backward pass"),
    (_identity_modules, r"calls a module \(Identity\)"),
    (lambda uses: (torch.ones(2, 2) @ torch.ones(2, 2), {})[1], r"runs a matrix product or a convolution \(matmul\)"),
    (_dispatch_mode_popped, r"runs a backward pass"),
    (_thread_left_running, r"leaves a thread running when it returns"),
], ids=["direct", "map_-callback", "thread", "extrapolated", "identity-modules", "matmul", "mode-popped",
        "thread-left"])
def test_check_no_model_run_fails_a_model_run_however_it_is_hidden(run, message):
    with fails_with(rf"^predict\(7\) {message}.*: it must answer without running a model \(no module, matrix "
                    r"product or backward pass\)$"):
        with check_no_model_run("predict(7)"):
            run(7)
    if hasattr(run, "done"):
        run.done.set()
        run.thread.join()
    assert torch._C._len_torch_dispatch_stack() == 0


def test_check_no_model_run_passes_arithmetic_and_observes_that_nothing_ran(monkeypatch):
    from hooklab import observations

    with check_no_model_run("predict(7)"):
        counts = {"forward hook": 7, "tensor hook": int(torch.tensor(7) > 0)}  # plain tensor ops are no model
        torch.ones(2, requires_grad=True) * 2  # nor is a graph that no backward pass runs
    assert counts == {"forward hook": 7, "tensor hook": 1}
    monkeypatch.setattr(observations, "active", lambda: True)
    sent = []
    monkeypatch.setattr("hooklab.checks.observe", lambda kind, label, value, **options: sent.append((label, value)))
    with check_no_model_run("predict(7)"):
        pass
    with fails_with(r"^predict\(7\) runs a backward pass"):  # observed, and still failed in the kernel
        with check_no_model_run("predict(7)"):
            _fires(2)
    assert [label for label, _ in sent] == ["what predict(7) ran (it must run no model)"] * 2
    assert sent[0][1]["value"] == "nothing of a model" and sent[1][1]["value"].startswith("runs a backward pass")



# random_generator -------------------------------------------------------------------------


def test_random_generator_is_fresh_each_time():
    draws = {tuple(torch.randint(0, 2**31, (4,), generator=random_generator()).tolist()) for _ in range(3)}
    assert len(draws) == 3


# calling ---------------------------------------------------------------------------------


def student_cell(source: str) -> dict[str, object]:
    """What a student's cell defines, run as a cell of its own (its own file name, its lines readable)."""
    name = f"<student cell {len(linecache.cache)}>"
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    namespace: dict[str, object] = {"torch": torch, "nn": nn}
    exec(compile(source, name, "exec"), namespace)
    return namespace


def test_a_raising_student_call_is_one_sentence_naming_the_call_its_input_the_error_and_the_students_line():
    wrong_linear = student_cell(  # a wrong reading: the weight stored (in_features, out_features), used as it is
        "class WrongLinear(nn.Module):\n"
        "    def __init__(self, in_features, out_features):\n"
        "        super().__init__()\n"
        "        self.weight = nn.Parameter(torch.ones(in_features, out_features, dtype=torch.float64))\n"
        "\n"
        "    def forward(self, x):\n"
        "        return x @ self.weight.T\n")["WrongLinear"]
    x = torch.ones(1, 3, dtype=torch.float64)
    with pytest.raises(AnswerError) as caught:
        with calling("WrongLinear(3, 1)(x)", x=x):
            wrong_linear(3, 1)(x)
    assert str(caught.value) == (
        "WrongLinear(3, 1)(x), with x of shape (1, 3), float64, raised RuntimeError: mat1 and mat2 shapes cannot be "
        "multiplied (1x3 and 1x3) (line 7: return x @ self.weight.T)")
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


_answer_cell: dict = {}
exec(compile("def calls_a_typo():\n    typo\n", "<answer cell>", "exec"), _answer_cell)  # a student's function, its
# own cell's, with a typo in it


def test_calling_quotes_no_line_of_the_test_itself_and_lets_checkers_and_the_template_through(monkeypatch):
    with pytest.raises(AnswerError, match=r"^f\(3\), with dim=3, raised IndexError: tuple index out of range$"):
        with calling("f(3)", dim=3):
            (1, 2)[3]  # the test's own line: not quoted
    with fails_with("^answer has 1 item"), calling("f()"):
        check_answer([torch.ones(1)], {"x1": torch.ones(1), "x2": torch.ones(1)})
    with pytest.raises(NotImplementedError), calling("f()"):
        raise NotImplementedError()
    with calling("f()"):
        pass
    with pytest.raises(NameError), calling("grad_cam(x)"):  # the answer's cell failed or did not run: the hint
        undefined_answer()  # noqa: F821 (as a test cell calls an answer whose cell raised a SyntaxError)
    with pytest.raises(AnswerError, match="raised NameError: name 'typo' is not defined"), calling("f()"):
        _answer_cell["calls_a_typo"]()
    seen = []
    monkeypatch.setattr("hooklab.checks.observations.active", lambda: True)
    monkeypatch.setattr("hooklab.checks.observe", lambda kind, label, value: seen.append((kind, label, value)))
    with pytest.raises(AnswerError), calling("f(x)", x=torch.ones(2, dtype=torch.bfloat16)):
        raise ValueError("no")
    assert seen == [("raised", "f(x), with x of shape (2,), bfloat16,", {"type": "str", "value": "ValueError: no"})]


# what a student sees ---------------------------------------------------------------------


@pytest.mark.slow  # runs the check in a kernel
def test_a_failed_check_shows_the_message_alone_not_the_calls_that_led_to_it():
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import torch\nfrom hooklab.checks import check_answer\n\n"
        "def my_test():\n    check_answer([torch.ones(1)], {'x1': torch.ones(1), 'x2': torch.zeros(1)})\n\nmy_test()"
    )]
    nbclient.NotebookClient(nb, allow_errors=True, timeout=120).execute()
    (error,) = [o for o in nb.cells[0].outputs if o.output_type == "error"]
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))  # without the colours
    assert error.ename == "AnswerError" and shown.strip() == "AnswerError: answer has 1 item, expected 2: [x1, x2]", (
        f"more than the checker's sentence: {shown}")
    assert "checks.py" not in shown, f"hooklab's own frames are shown:\n{shown}"


def test_check_equal_takes_a_numpy_count_for_an_int_but_nothing_that_claims_equality():
    check_equal(np.prod((3, 4)), 12, "count")
    with fails_with("count should be 12, got 11"):
        check_equal(np.int64(11), 12, "count")

    class Same(list):
        def __eq__(self, other):
            return True

    with fails_with(r"^shapes is a test_checks\..*, expected a list$"):
        check_equal(Same(), [1, 2], "shapes")

    class Anything:
        def __eq__(self, other):
            return True

    with fails_with(r"^shapes\[0\] is a test_checks\..*, expected a tuple$"):
        check_equal([Anything()], [("layer", (2,))], "shapes")
    with fails_with(r"^names holds a test_checks\..*; expected names \(str\)$"):
        check_names([Anything()], ["weight"], "names")


# check_backward -----------------------------------------------------------------------------


class Mul(torch.autograd.Function):
    """x * y with broadcasting, and a right backward."""

    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return (grad_output * y).sum_to_size(x.shape), (grad_output * x).sum_to_size(y.shape)


def mul_with(backward):
    return type("Mul", (Mul,), {"backward": staticmethod(backward)})


class MaxDim(torch.autograd.Function):
    @staticmethod
    def forward(x, dim):
        values, indices = x.max(dim)
        return values, indices

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(inputs[0], output[1])
        ctx.dim = inputs[1]

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        x, indices = ctx.saved_tensors
        return torch.zeros_like(x).scatter(ctx.dim, indices.unsqueeze(ctx.dim), grad_values.unsqueeze(ctx.dim)), None


X, Y = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
CALL = re.escape("Mul.apply(x: (3, 4) float64, y: (4,) float64): ")


def test_backward_passes_right_gradients_by_finite_differences_and_by_reference():
    check_backward(Mul, X, Y)
    check_backward(Mul, X.float(), Y.float(), reference=torch.mul)
    check_backward(MaxDim, torch.tensor([[1.0, 3.0, 3.0]]), 1, reference=lambda x, dim: x.max(dim))  # a tie


def test_backward_names_the_input_the_index_and_the_error():
    def half_of_y(ctx, grad_output):
        x, y = ctx.saved_tensors
        return (grad_output * y).sum_to_size(x.shape), (grad_output * x).sum_to_size(y.shape) / 2

    with fails_with(CALL + r"grad of input y has the wrong values: -?[\d.]+ instead of -?[\d.]+ at index \(0,\) \(4 of "
                           r"4 entries wrong\)$"):
        check_backward(mul_with(half_of_y), X, Y)


def test_backward_runs_once_on_tensors_laid_out_as_through_a_transpose_and_leaves_that_grad_output_alone():
    """Autograd's engine hands backward the gradient of an output used through a transpose as it is laid out: a
    backward that views grad_output or a saved input, or writes into a grad_output so laid out, fails; one that
    reshapes passes."""
    def viewed(ctx, grad_output):  # flattened with view: right where grad_output is laid out as the output
        x, y = ctx.saved_tensors
        return (grad_output * y).sum_to_size(x.shape), (grad_output * x).view(-1).reshape(-1, y.shape[0]).sum(0)

    def scribbled(ctx, grad_output):
        x, y = ctx.saved_tensors
        gradients = (grad_output * y).sum_to_size(x.shape), (grad_output * x).sum_to_size(y.shape)
        if not grad_output.is_contiguous():
            grad_output.zero_()
        return gradients

    with fails_with(CALL + r"backward through autograd's engine \(inputs and grad_output not contiguous in memory, as "
                           r"for tensors used through a transpose\), another graph of the Function made before it "
                           r"ran \(keep what backward needs on ctx: it belongs to one call\) raised RuntimeError: view "
                           r"size is not compatible"):
        check_backward(mul_with(viewed), X, Y)
    with fails_with(CALL + r"Mul\.backward changed grad_output in place \(leave it as it is"):
        check_backward(mul_with(scribbled), X, Y)

    def reshaped(ctx, grad_output):
        x, y = ctx.saved_tensors
        return (grad_output * y).sum_to_size(x.shape), (grad_output * x).reshape(-1).reshape(-1, y.shape[0]).sum(0)

    check_backward(mul_with(reshaped), X, Y)


def test_backward_runs_with_each_input_needing_no_gradient_and_a_second_pass_leaves_grad_output_alone():
    """An input that needs no gradient (a frozen parameter) may be skipped, and only that one; the grad_output of the
    second pass through the engine must be left as it was, as that of the first."""
    def y_under_x(ctx, grad_output):  # y's gradient written under x's test
        x, y = ctx.saved_tensors
        grad_x = grad_y = None
        if ctx.needs_input_grad[0]:
            grad_x, grad_y = (grad_output * y).sum_to_size(x.shape), (grad_output * x).sum_to_size(y.shape)
        return grad_x, grad_y

    def zeroes_later(ctx, grad_output):  # from the second backward of a kept graph on
        x, y = ctx.saved_tensors
        gradients = (grad_output * y).sum_to_size(x.shape), (grad_output * x).sum_to_size(y.shape)
        ctx.calls = getattr(ctx, "calls", 0) + 1
        if ctx.calls > 1:
            grad_output.zero_()
        return gradients

    def skips_what_is_not_needed(ctx, grad_output):
        x, y = ctx.saved_tensors
        return ((grad_output * y).sum_to_size(x.shape) if ctx.needs_input_grad[0] else None,
                (grad_output * x).sum_to_size(y.shape) if ctx.needs_input_grad[1] else None)

    with fails_with(CALL + r"y\.grad through autograd's engine as in a model \(other values, grad_output not "
                           r"contiguous; x needing no gradient, as a frozen parameter: see ctx\.needs_input_grad\) is "
                           r"None, expected a tensor of shape \(4,\)$"):
        check_backward(mul_with(y_under_x), X, Y)
    with fails_with(CALL + r"Mul\.backward changed grad_output in place \(leave it as it is"):
        check_backward(mul_with(zeroes_later), X, Y)
    check_backward(mul_with(skips_what_is_not_needed), X, Y)


def test_backward_of_a_broadcast_input_must_have_its_shape_although_autograd_would_reduce_it():
    def not_reduced(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * y, grad_output * x

    # the engine sums it
    assert torch.autograd.gradcheck(mul_with(not_reduced).apply,
                                    (X.clone().requires_grad_(), Y.clone().requires_grad_()))
    with fails_with(CALL + r"grad of input y: shape \(4,\) expected, got \(3, 4\)$"):
        check_backward(mul_with(not_reduced), X, Y)


def test_backward_returns_one_gradient_per_input_none_for_the_others():
    with fails_with(CALL + r"Mul.backward returned 1 gradient, expected 2: one per input of forward \(x, y\)$"):
        check_backward(mul_with(lambda ctx, g: g * ctx.saved_tensors[1]), X, Y)
    with fails_with(r"MaxDim.backward returned 1 gradient, expected 2: one per input of forward \(x, dim\), None for "
                    r"dim$"):
        backward = staticmethod(lambda ctx, g, i: MaxDim.backward(ctx, g, i)[0])
        check_backward(type("MaxDim", (MaxDim,), {"backward": backward}), X, 1)
    with fails_with(r"the gradient for dim should be None \(dim is not a floating-point tensor\); got a torch.Tensor$"):
        backward = staticmethod(lambda ctx, g, i: (MaxDim.backward(ctx, g, i)[0], g))
        check_backward(type("MaxDim", (MaxDim,), {"backward": backward}), X, 1)
    with fails_with(CALL + r"the gradient of input x is None, expected a tensor of shape \(3, 4\)$"):
        check_backward(mul_with(lambda ctx, g: (None, (g * ctx.saved_tensors[0]).sum(0))), X, Y)
    with fails_with(CALL + r"the gradient of input x has dtype torch.float32, expected torch.float64"):
        check_backward(mul_with(lambda ctx, g: tuple(t.float() for t in Mul.backward(ctx, g))), X, Y)


def test_ties_are_judged_against_the_reference_not_finite_differences():
    def every_tie(ctx, grad_values, grad_indices):
        x, indices = ctx.saved_tensors
        values = x.gather(ctx.dim, indices.unsqueeze(ctx.dim))
        return (x == values) * grad_values.unsqueeze(ctx.dim), None

    with fails_with(r"grad of input x has the wrong values: [\d.]+ instead of 0 at index \(0, 2\)"):
        check_backward(type("MaxDim", (MaxDim,), {"backward": staticmethod(every_tie)}),
                       torch.tensor([[1.0, 3.0, 3.0]]), 1,
                       reference=lambda x, dim: x.max(dim))


def test_an_error_in_backward_is_reported_with_the_students_line_not_a_traceback():
    def broken(ctx, grad_output):
        return grad_output[7], None

    with fails_with(CALL + r"Mul.backward raised IndexError: index 7 is out of bounds .* \(line \d+: return "
                           r"grad_output\[7\], None\)$"):
        check_backward(mul_with(broken), X, Y)

    def blank(ctx, grad_output):
        raise NotImplementedError()

    with fails_with(r"^Mul.backward is not written yet: replace `raise NotImplementedError\(\)` with your answer"):
        check_backward(mul_with(blank), X, Y)


def by_autograd(ctx, grad_output):
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_() for t in ctx.saved_tensors]
        return torch.autograd.grad(leaves[0] * leaves[1], leaves, grad_output)


def by_complex_step(ctx, grad_output):
    x, y = ctx.saved_tensors
    step = 1e-30  # exact to rounding for a product, unlike finite differences
    gx = ((x.to(torch.complex128) + 1j * step) * y).imag / step
    gy = (x * (y.to(torch.complex128) + 1j * step)).imag / step
    return (gx * grad_output).to(x.dtype), (gy * grad_output).to(y.dtype)


@pytest.mark.parametrize(("backward", "what"), [
    (by_autograd, "turns gradient recording on"),
    (by_complex_step, "computes with complex numbers (to), as a derivative by the complex step does"),
    (lambda ctx, g: torch.func.vjp(torch.mul, *ctx.saved_tensors)[1](g), "turns gradient recording on"),
    (lambda ctx, g: (torch._softmax_backward_data(g, ctx.saved_tensors[0], 1, g.dtype), None),
     "calls PyTorch's own backward function (_softmax_backward_data)"),
    (lambda ctx, g: (torch.ops.aten._log_softmax_backward_data(g, ctx.saved_tensors[0], 1, g.dtype), None),
     "calls PyTorch's own backward function (_log_softmax_backward_data)"),
], ids=["enable_grad and autograd.grad", "complex step", "torch.func.vjp", "torch backward function",
        "aten backward kernel"])
def test_backward_that_uses_autograd_fails_whatever_it_returns(backward, what):
    with fails_with(CALL + re.escape(f"Mul.backward {what}") + ".*no autograd, torch.func or PyTorch backward "
                                                               "functions inside the Function"):
        check_backward(mul_with(backward), X, Y)


def test_a_graph_built_in_setup_context_for_backward_is_caught():
    class Sneaky(Mul):
        @staticmethod
        def setup_context(ctx, inputs, output):
            with torch.enable_grad():
                ctx.leaves = [t.detach().requires_grad_() for t in inputs]
                ctx.product = ctx.leaves[0] * ctx.leaves[1]

        @staticmethod
        def backward(ctx, grad_output):
            return torch.autograd.grad(ctx.product, ctx.leaves, grad_output)

    with fails_with(re.escape("Sneaky.setup_context turns gradient recording on")):
        check_backward(Sneaky, X, X.clone())


def _on_a_thread(ctx, grad_output):
    box = []
    # a new thread: no mode, recording on
    thread = threading.Thread(target=lambda: box.append(by_autograd(ctx, grad_output)))
    thread.start()
    thread.join()
    return box[0]


def _inside_an_operator(ctx, grad_output):
    class Index:  # torch calls __index__ from inside the operator, while the mode handles that operator
        def __index__(self):
            box.append(by_autograd(ctx, grad_output))
            return 0

    box = []
    torch.zeros(1)[Index()]
    return box[0]


def _torch_function_off(ctx, grad_output):
    with torch._C.DisableTorchFunction():
        return by_autograd(ctx, grad_output)


def _compiled(ctx, grad_output):
    return torch.compile(lambda g, x, y: (g * y, g * x), backend="eager")(grad_output, *ctx.saved_tensors)


def _the_modes_note_dropped(ctx, grad_output):
    torch._C._get_function_stack_at(0).note = lambda what: None
    return by_autograd(ctx, grad_output)


def _with_a_profiler_of_its_own(ctx, grad_output):
    with torch._C.DisableTorchFunction():
        torch.autograd.profiler._disable_profiler()  # the watch's own
        result = by_autograd(ctx, grad_output)
        torch.profiler.profile().__enter__()  # a new one, that saw nothing of it
        return result


@pytest.mark.parametrize(("backward", "what"), [
    (_on_a_thread, "records a graph"), (_inside_an_operator, "records a graph"),
                                                (_torch_function_off, "records a graph"),
    (_compiled, "runs code compiled by torch.compile"), (_the_modes_note_dropped, "records a graph"),
    (_with_a_profiler_of_its_own, "stops the profiler that watches it"),
], ids=["another thread", "a callback inside an operator", "torch function handling off", "torch.compile",
        "the mode's notes dropped", "the profiler replaced"])
def test_autograd_where_the_mode_cannot_see_is_seen_by_the_profiler(backward, what):
    """The mode sees its own thread's calls while it is not itself handling one; the profiler sees every thread."""
    with fails_with(CALL + re.escape(f"Mul.backward {what}") + ".*no autograd, torch.func or PyTorch backward "
                                                               "functions inside the Function"):
        check_backward(mul_with(backward), X, Y)
    assert not torch.autograd.profiler._is_profiler_enabled, "a check must leave no profiler running"


class _Gradients(tuple):
    """A tuple that computes autograd's gradients of x * y when it is read: code run by whoever iterates it."""

    def __iter__(self):
        ctx, grad_output = self.job
        return iter(by_autograd(ctx, grad_output))


def _returns_its_own_tuple(ctx, grad_output):
    gradients = _Gradients((torch.zeros_like(ctx.saved_tensors[0]), None))  # what autograd's engine would read
    gradients.job = (ctx, grad_output)
    return gradients


def test_what_backward_returns_is_taken_in_the_watch_a_tuple_of_the_answers_own_class_is_refused():
    with fails_with(CALL + re.escape("Mul.backward raised AnswerError: backward returned a ") + r"\S*_Gradients: "
                                                                                                r"return a tensor, or "
                                                                                                r"a tuple"):
        check_backward(mul_with(_returns_its_own_tuple), X, Y)


def test_methods_are_read_as_plain_static_methods_without_running_the_answers_code():
    read = []

    class Backward:  # a descriptor: reading Mul.backward would run its __get__
        def __get__(self, instance, owner):
            read.append(owner)
            return Mul.backward

    with fails_with(r"Mul.backward is a \S*Backward: define forward, setup_context and backward as plain static "
                    r"methods"):
        check_backward(type("Mul", (Mul,), {"backward": Backward()}), X, Y)
    assert read == [], "the checker ran the answer's descriptor"


def test_forwards_input_names_come_from_its_code_not_a_signature_of_the_answers():
    read = []

    class Wrapped:  # what inspect.signature follows: reading it would run the answer's __getattr__
        def __getattr__(self, name):
            read.append(name)
            raise AttributeError(name)

    def forward(x, y):
        return x * y

    forward.__wrapped__ = Wrapped()
    with fails_with(r"Mul\.forward carries a __signature__ or wraps something other than a plain function: write "
                    r"forward as a plain static method$"):  # applying the class itself would read it
        check_backward(type("Mul", (Mul,), {"forward": staticmethod(forward)}), X, Y, reference=torch.mul)
    with fails_with(CALL + "the gradient of input x is None"):
        check_backward(type("Mul", (Mul,),
                            {"forward": staticmethod(forward),
                             "backward": staticmethod(lambda ctx, g: (None, g.sum(0)))}),
                       X, Y, reference=torch.mul)
    assert read == [], "the checker ran the answer's code to name forward's inputs"


def _hooked(hook):
    """Mul, with a hook on its backward node (ctx) that autograd's engine runs after backward."""
    class Hooked(Mul):
        @staticmethod
        def setup_context(ctx, inputs, output):
            Mul.setup_context(ctx, inputs, output)
            ctx.register_hook(lambda grad_inputs, grad_outputs: hook(ctx, grad_outputs))

    return type("Mul", (Hooked,), {})


def test_a_hook_the_function_registers_runs_watched_in_autograds_engine():
    cached = []
    with fails_with(CALL + re.escape("Mul.backward through autograd's engine (with any hook it registered) ")
                    + ".*no autograd"):
        check_backward(_hooked(lambda ctx, grad_outputs: cached.append(by_autograd(ctx, grad_outputs[0]))), X, Y,
                       reference=torch.mul)
    seen = []
    check_backward(_hooked(lambda ctx, grad_outputs: seen.append(len(grad_outputs))), X, Y)  # a hook of its own is fine
    assert seen, "the honest hook never ran"


def test_a_profiler_the_student_left_running_does_not_blind_the_watch():
    with torch.profiler.profile(), fails_with(CALL + re.escape("Mul.backward records a graph")):
        check_backward(mul_with(_on_a_thread), X, Y)
    with torch.profiler.profile():
        check_backward(Mul, X, Y)


class _Grads(torch.utils.data.Dataset):
    """Autograd's gradients of x * y, computed in a DataLoader's worker: another process."""

    def __init__(self, *tensors):
        self.tensors = tensors

    def __len__(self):
        return 1

    def __getitem__(self, index):
        x, y, grad_output = (t.clone() for t in self.tensors)
        with torch.enable_grad():
            leaves = (x.requires_grad_(), y.requires_grad_())
            return torch.autograd.grad(leaves[0] * leaves[1], leaves, grad_output)


def _in_a_worker_process(ctx, grad_output):
    loader = torch.utils.data.DataLoader(_Grads(*ctx.saved_tensors, grad_output), batch_size=None, num_workers=1,
                                         generator=torch.Generator())
    return tuple(g.clone() for g in next(iter(loader)))


def test_autograd_in_another_process_is_named():
    with fails_with(CALL + re.escape("Mul.backward starts a process (a DataLoader's workers, multiprocessing), which "
                                     "no watch sees")):
        check_backward(mul_with(_in_a_worker_process), X, Y)


class _Jacobian(torch.autograd.Function):
    """A Function whose own apply computes the Jacobian with autograd, where no watch runs, for backward to use."""

    @classmethod
    def apply(cls, *args):
        out = super().apply(*args)
        with torch.enable_grad():
            out.grad_fn.jacobian = torch.autograd.functional.jacobian(lambda x, y: x * y, args)
        return out


def test_a_function_with_its_own_apply_is_refused():
    class Mul2(_Jacobian, Mul):
        @staticmethod
        def backward(ctx, grad_output):
            return tuple(torch.tensordot(grad_output, j, dims=grad_output.dim()) for j in ctx.jacobian)

    with fails_with(re.escape("Mul2 defines its own apply, which the check would run unwatched")):
        check_backward(Mul2, X, Y)


def test_backward_may_be_written_as_its_alias_vjp_and_may_draw_random_numbers():
    """autograd takes vjp for backward; what an answer draws does not shift the draws of the test around it."""
    def draws(ctx, grad_output):
        torch.rand(3)  # a stray draw: the test's next inputs stay the same
        return Mul.backward(ctx, grad_output)

    class ByVjp(torch.autograd.Function):
        forward, setup_context = Mul.forward, Mul.setup_context
        vjp = staticmethod(draws)

    torch.manual_seed(0)
    check_backward(ByVjp, X, Y)
    after = torch.rand(1)
    torch.manual_seed(0)
    assert torch.equal(torch.rand(1), after)


class _OldStyleCumsum(torch.autograd.Function):
    """The older style of notebook 05: forward takes ctx and saves what backward needs itself."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return x.cumsum(dim)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.flip(ctx.dim).cumsum(ctx.dim).flip(ctx.dim), None


def test_a_function_in_the_older_forward_ctx_style_is_checked_by_finite_differences_too():
    check_backward(_OldStyleCumsum, X, 1)
    wrong = type("Cumsum", (_OldStyleCumsum,), {"backward": staticmethod(lambda ctx, g: (g.cumsum(ctx.dim), None))})
    with fails_with(r"grad of input x has the wrong values: .* at index"):
        check_backward(wrong, X, 1)


_MADE: list[type] = []  # the classes _Reinstating and Swapping's __init_subclass__ were run for


class _Reinstating(type(torch.autograd.Function)):
    """A metaclass that gives every subclass the autograd backward of its first class."""

    def __new__(mcs, name, bases, namespace):
        cls = super().__new__(mcs, name, bases, namespace)
        if bases and bases[0] is not torch.autograd.Function:
            _MADE.append(cls)
            cls.backward = staticmethod(by_autograd)
        return cls


@pytest.mark.parametrize("route", ["__init_subclass__", "metaclass"])
def test_a_function_with_code_that_runs_as_classes_are_made_from_it_is_refused_before_any_runs(route):
    """The checker watches a subclass of the student's Function; making it would run that code where no watch sees it
    (autograd's gradients computed for the inputs the test holds, or the methods swapped back)."""
    if route == "__init_subclass__":
        class Swapping(Mul):
            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__(**kwargs)
                _MADE.append(cls)
                cls.backward = staticmethod(by_autograd)
    else:
        class Swapping(Mul, metaclass=_Reinstating):
            pass
    _MADE.clear()
    with fails_with(re.escape("Swapping has a metaclass or an __init_subclass__ of its own, which run where no watch "
                              "sees them")):
        check_backward(Swapping, X, Y)
    assert _MADE == [], "the answer's class-making code ran"


def test_backward_checks_the_given_forward_and_what_it_is_handed():
    with fails_with(r"^a Python int was given, expected a torch.autograd.Function subclass$"):
        check_backward(3, X)
    with fails_with(r"the output of Mul.apply\(x: \(3, 4\) float64, y: \(4,\) float64\) \(leave forward as it was "
                    r"given\) has the wrong values"):
        check_backward(Mul, X, Y, reference=torch.add)
    with fails_with(r"check_backward without a reference needs float64 inputs; x, y is not"):
        check_backward(Mul, X.float(), Y.float())


def test_a_backward_that_changes_grad_output_in_place_fails_even_with_the_right_gradients():
    def writes_into_grad_output(ctx, grad_output):
        x, y = ctx.saved_tensors
        right_for_x = (grad_output * y).sum_to_size(x.shape)
        grad_output.mul_(x)  # the right gradient of y, computed in the caller's tensor
        return right_for_x, grad_output.sum_to_size(y.shape)

    with fails_with(CALL + "Mul.backward changed grad_output in place"):
        check_backward(mul_with(writes_into_grad_output), X, Y)


# hooks_left, check_no_hooks_left -------------------------------------------------------------


def test_check_no_hooks_left_names_every_module_given_a_forward_or_backward_hook_in_its_block():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))
    with fails_with(r"got \['<model>', '1.0'\]"):
        with check_no_hooks_left(model, "the hooks left"):
            model.register_forward_pre_hook(lambda module, args: None)
            model[1][0].register_full_backward_hook(lambda module, grad_input, grad_output: None)


def test_check_no_hooks_left_names_module_and_global_hooks_added_in_its_block():
    model = nn.Linear(2, 2)
    with fails_with(r"the hooks left after answer\(model\) should be \[\], got \['<model>', 'a global hook'\]"):
        with check_no_hooks_left(model, "the hooks left after answer(model)"):
            model.register_forward_hook(lambda module, args, output: None)
            global_handle = nn.modules.module.register_module_full_backward_hook(
                lambda module, grad_input, grad_output: None)
    global_handle.remove()


def test_check_no_hooks_left_passes_hooks_removed_and_global_hooks_from_before():
    model = nn.Linear(2, 2)
    earlier = nn.modules.module.register_module_forward_hook(lambda module, args, output: None)
    try:
        with check_no_hooks_left(model, "the hooks left"):
            model.register_forward_pre_hook(lambda module, args: None).remove()
    finally:
        earlier.remove()


def test_check_no_hooks_left_lets_an_error_of_its_block_through_unchecked():
    model = nn.Linear(2, 2)
    with pytest.raises(KeyboardInterrupt):
        with check_no_hooks_left(model, "the hooks left"):
            model.register_forward_hook(lambda module, args, output: None)
            raise KeyboardInterrupt


def test_check_no_hooks_left_tells_global_hooks_apart_instead_of_counting_them():
    """A call that removes a global hook it holds and leaves another in its place changes no count."""
    model = nn.Linear(2, 2)
    earlier = nn.modules.module.register_module_forward_pre_hook(lambda module, args: None)
    with fails_with(r"should be \[\], got \['a global hook'\]"):
        with check_no_hooks_left(model, "the hooks left"):
            earlier.remove()
            swapped = nn.modules.module.register_module_forward_hook(lambda module, args, output: None)
    swapped.remove()


def test_check_no_hooks_left_reads_the_modules_not_methods_set_on_the_instance():
    model = nn.Sequential(nn.Linear(2, 2))
    with fails_with(r"got \['0'\]"):
        with check_no_hooks_left(model, "the hooks left"):
            model[0].register_forward_hook(lambda module, args, output: None)
            model.named_modules = lambda *args, **kwargs: iter(())  # hides the model from a caller of the method
            model.modules = lambda: iter(())
    with fails_with(r"got \['<model>'\]"):
        with check_no_hooks_left(model, "the hooks left"):
            object.__setattr__(model, "_forward_hooks", {"a hook": None})  # a registry of its own


def test_check_no_hooks_left_leaves_hooks_held_before_its_block_alone():
    model = nn.Sequential(nn.Linear(2, 2))
    model[0].register_forward_hook(lambda module, args, output: None)  # e.g. a student's own experiment
    with check_no_hooks_left(model, "the hooks left"):
        model(torch.randn(1, 2))
    assert len(model[0]._forward_hooks) == 1


def test_check_backward_takes_an_allowed_function_that_torch_runs_on_worker_threads():
    """conv_transpose1d in float64 splits its work over torch's intra-op threads, which start with gradient
    recording on: their ops must not read as the backward recording a graph."""

    class Conv1d(torch.autograd.Function):
        @staticmethod
        def forward(x, weight):
            return torch.nn.functional.conv1d(x, weight)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, grad_output):
            x, weight = ctx.saved_tensors
            grad_weight = torch.einsum("nol,nclk->ock", grad_output, x.unfold(2, weight.shape[2], 1))
            return torch.nn.functional.conv_transpose1d(grad_output, weight), grad_weight

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        check_backward(Conv1d, torch.randn(2, 3, 20, dtype=torch.float64), torch.randn(4, 3, 5, dtype=torch.float64))
        assert torch.get_num_threads() == 2, "the watch gives the thread count back"
    finally:
        torch.set_num_threads(threads)


def test_check_backward_is_not_fooled_by_a_profiler_session_started_in_place_of_its_own():
    """A backward that ends the watch's profiler session, works unwatched, then starts a session of its own and
    records the watch's secret mark again is reported as stopping the profiler that watches it."""

    class Swapping(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad_output):
            stopper = torch.autograd.profiler.profile()
            stopper.__exit__(None, None, None)  # ends the session running now: the watch's
            marks = {event.name() for event in stopper.kineto_results.events() if event.name().startswith("hooklab")}
            fresh = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], acc_events=True)
            fresh.__enter__()
            for mark in marks:
                with torch.profiler.record_function(mark):
                    pass
            return grad_output * 2

    with fails_with("stops the profiler that watches it"):
        check_backward(Swapping, torch.randn(3, dtype=torch.float64))


def test_a_tensor_is_read_from_its_memory_whatever_kernel_torchs_operators_are_given():
    """The encoder reads a CPU tensor's memory by its data pointer, sizes and strides: a kernel registered for the
    operators a reader could use (detach, a copy, a dtype change) answers none of its reads. Views, a conjugate or
    negative bit and every dtype the encoder knows read as the values they hold."""
    import warnings

    from hooklab import observations

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 5, dtype=torch.float64, generator=generator)
    z = torch.randn(3, dtype=torch.complex128, generator=generator)
    tensors = [x, x.float(), x.half(), x.bfloat16(), x.t(), x[1:, ::2], x[0, :1].expand(3, 2), x[0, 0], x[:0],
               (x * 9).long(), x > 0, z.conj(), z.conj().imag, z.to(torch.complex64)]
    plain = [observations.encode(t) for t in tensors]
    assert [value["data"] for value in plain[:3]] != [plain[0]["data"]] * 3  # the dtypes are told apart
    for tensor, value in zip(tensors, plain):  # the values themselves, as torch computes them
        wide = torch.complex128 if tensor.is_complex() else torch.uint8 if tensor.dtype == torch.bool else (
            torch.float64 if tensor.is_floating_point() else torch.int64)
        want = tensor.detach().resolve_conj().resolve_neg().to(wide).contiguous().numpy().tobytes()
        assert observations.base64.b64decode(value["data"]) == want, tensor
    fake = torch.zeros(1)
    library = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns that a kernel is overridden
            for op in ("detach", "alias", "clone", "_to_copy", "contiguous", "resolve_conj", "resolve_neg"):
                library.impl(op, lambda *args, **kwargs: fake, "CPU")
        assert torch.ones(2).detach() is fake  # the kernels answer torch's own calls
        assert [observations.encode(t) for t in tensors] == plain
    finally:
        library._destroy()
    assert torch.ones(2).detach() is not fake
    # a meta tensor holds no values: it is not read (reading it would call operators a kernel could answer)
    assert observations.encode(torch.ones(2, device="meta")) == {
        "type": "other", "name": "a tensor on the meta device, which holds no values"}


def test_graded_backward_that_leaves_a_mode_entered_fails_as_it_returns(monkeypatch):
    """Graded, what backward returns is encoded as it returns; a torch mode it left entered (one that would see the
    checker's copies of it) fails the check there, in one sentence, before any code of the mode's can run."""
    from torch.utils.flop_counter import FlopCounterMode

    from hooklab import observations

    monkeypatch.setattr(observations, "active", lambda: True)
    monkeypatch.setattr("hooklab.checks.observe", lambda *args, **options: None)
    left = []

    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        counter = FlopCounterMode(display=False)
        counter.__enter__()
        left.append(counter)
        return grad_output * y, grad_output * x

    try:
        with fails_with(r"^Mul\.backward left a torch mode entered \(_FlopCounterMode\): exit every mode you enter "
                        "before it returns$"):
            check_backward(mul_with(backward), torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64))
    finally:
        for counter in reversed(left):
            counter.__exit__(None, None, None)
    assert len(left) == 1 and torch._C._len_torch_dispatch_stack() == 0


def test_in_a_graded_kernel_nothing_is_read_once_the_notebook_registered_a_kernel_for_an_aten_operator(monkeypatch):
    """A kernel registered for one of aten's operators runs inside the test's own computations too (``p.detach()``
    answered with the right values): once one was there, a graded kernel's checkers read nothing, and say which,
    even after the kernel was taken away again (one that lived only while gradcheck ran forged its verdict)."""
    import warnings

    from hooklab import messages, observations

    library = torch.library.Library("aten", "IMPL")  # made before the record: only its kernel is noted
    monkeypatch.setattr(torch.library, "_impls", torch.library._impls)  # both put back after the test
    monkeypatch.setattr(torch._C, "_dispatch_library", torch._C._dispatch_library)
    monkeypatch.setitem(observations._state, "kernels", observations.record_kernels(torch.library))
    monkeypatch.setitem(observations._state, "kernels_seen", (0, ""))
    value = torch.ones(2)
    read = observations.encode(value)
    own = torch.library.Library("hooklab_test", "FRAGMENT")  # a namespace of the notebook's own: still read
    own.define("twice(Tensor x) -> Tensor")
    own.impl("twice", lambda tensor: tensor * 2, "CPU")
    assert observations.encode(value) == read
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns that a kernel is overridden
            library.impl("detach", lambda tensor: tensor, "CPU")
    finally:
        library._destroy()
        own._destroy()
    assert "aten/detach/CPU" not in torch.library._impls  # gone from torch's record, not from the grader's
    assert observations.encode(value, expected=True) == read
    assert messages.compare(observations.encode(value), read, "the grad of x") == (
        "the grad of x was not read: it was computed after the notebook registered a kernel for torch's aten::detach "
        "(CPU) (torch.library: register kernels only for operators you made with custom_op)")
    # a library made for torch's operators, whose handle registers kernels without torch.library's record hearing of
    # them (type(op._lib)("aten", "IMPL").m.impl(...)): nothing read from its making on
    monkeypatch.setitem(observations._state, "kernels", observations.record_kernels(torch.library))
    monkeypatch.setitem(observations._state, "kernels_seen", (0, ""))
    assert observations.encode(value) == read
    anywhere = torch.library.Library("_", "IMPL")
    anywhere._destroy()
    assert messages.compare(observations.encode(value), read, "the grad of x") == (
        "the grad of x was not read: it was computed after the notebook made a library of kernels for torch's _ "
        "operators (torch.library: register kernels only for operators you made with custom_op)")
    monkeypatch.setattr(torch.library, "_impls", set(torch.library._impls))  # the record replaced: nothing read
    assert messages.compare(observations.encode(value), read, "the grad of x") == (
        "the grad of x was not read: it was computed after the notebook replaced torch.library's record of kernels "
        "(torch.library: register kernels only for operators you made with custom_op)")
    # whoever calls Library (a torch function handed it: its frame is torch's file) and however the maker is called
    # (keywords): noted; a fragment of prims (torch.compile's first call defines prims operators in some) is not
    monkeypatch.setitem(observations._state, "kernels", observations.record_kernels(torch.library))
    monkeypatch.setitem(observations._state, "kernels_seen", (0, ""))
    torch.library.Library("prims", "FRAGMENT")._destroy()
    assert observations.encode(value) == read
    from torch.utils._pytree import tree_map
    tree_map(functools.partial(torch.library.Library, "aten"), "IMPL")._destroy()
    assert "made a library of kernels for torch's aten operators" in observations.kernel_added()
    monkeypatch.setitem(observations._state, "kernels", observations.record_kernels(torch.library))
    monkeypatch.setitem(observations._state, "kernels_seen", (0, ""))
    torch._C._dispatch_library(kind="IMPL", name="prims", dispatch="CPU")
    assert "made a library of kernels for torch's prims operators" in observations.kernel_added()
    # any dispatch key counts (an empty or "Undefined" one, which torch turns into a composite kernel; vmap's, whose
    # own torch registers before the record is in place); aten's alone
    assert [key for key in ("aten/to.dtype/Undefined", "aten/item/", "aten/addr/FuncTorchBatched", "prims/add/CPU",
                            "mylib/double/CPU") if observations._aten_kernel(key)] == [
        "aten/to.dtype/Undefined", "aten/item/", "aten/addr/FuncTorchBatched"]
