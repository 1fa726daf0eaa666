"""The widgets, driven through their widget controls and checked through their data."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from hooklab.widgets import (
    ApplyOrder,
    FunctionPlayground,
    GradientFlow,
    HookTimeline,
    ModuleExplorer,
    OrderPuzzle,
    Prediction,
    PuzzleError,
    VanishingPuzzle,
    record_events,
)


@pytest.fixture
def two_layers() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))


def test_timeline_records_every_event_in_execution_order(two_layers):
    events = record_events(two_layers, torch.randn(4, 3))
    assert [(e.kind, e.where) for e in events] == [
        ("forward pre-hook", "model (Sequential)"),
        ("forward pre-hook", "0 (Linear)"),
        ("forward", "0 (Linear)"),
        ("forward hook", "0 (Linear)"),
        ("forward pre-hook", "1 (Linear)"),
        ("forward", "1 (Linear)"),
        ("forward hook", "1 (Linear)"),
        ("forward", "model (Sequential)"),
        ("forward hook", "model (Sequential)"),
        ("backward pre-hook", "model (Sequential)"),
        ("backward pre-hook", "1 (Linear)"),
        ("tensor hook", "1.bias"),
        ("grad accumulated", "1.bias"),
        ("tensor hook", "1.weight"),
        ("grad accumulated", "1.weight"),
        ("backward hook", "1 (Linear)"),
        ("backward pre-hook", "0 (Linear)"),
        ("tensor hook", "0.bias"),
        ("grad accumulated", "0.bias"),
        ("tensor hook", "0.weight"),
        ("grad accumulated", "0.weight"),
        ("backward hook", "0 (Linear)"),
        ("backward hook", "model (Sequential)"),
        ("tensor hook", "input 0"),
    ]
    assert [e.index for e in events] == list(range(len(events)))
    assert events[1].tensors == "(4×3,)", "a pre-hook sees the inputs' shapes"
    assert events[12].tensors == "1 [4]", "small tensors are shown with their values (bias grad = batch size)"


def test_timeline_leaves_the_model_as_it_was(two_layers):
    two_layers[0].weight.grad = torch.ones(2, 3)
    record_events(two_layers, torch.randn(4, 3))
    for module in two_layers.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks and not module._backward_hooks
    assert torch.equal(two_layers[0].weight.grad, torch.ones(2, 3)), "an existing .grad must be restored"
    assert two_layers[1].weight.grad is None


def test_timeline_steps_with_buttons_and_slider(two_layers):
    timeline = HookTimeline(two_layers, torch.randn(4, 3))
    assert timeline.step == 0 and "forward pre-hook" in timeline.current.value
    timeline.stepper.next.click()
    timeline.stepper.next.click()
    assert timeline.step == 2
    assert "<b>forward</b>" in timeline.current.value and "0 (Linear)" in timeline.current.value
    timeline.stepper.back.click()
    assert timeline.step == 1
    timeline.step = 1000
    assert timeline.step == len(timeline.events) - 1, "stepping past the end stops at the last event"
    assert "input 0" in timeline.current.value
    assert timeline._repr_mimebundle_()["text/plain"] == timeline.text() == str(timeline)


def test_timeline_slider_table_and_caption_count_events_alike(two_layers):
    timeline = HookTimeline(two_layers, torch.randn(4, 3))
    timeline.stepper.slider.value = 3
    assert timeline.step == 2, "event 3 on the slider is the third event"
    assert timeline.current.value.startswith(f"<b>3/{len(timeline.events)}</b>")
    assert "<tr style='background:#ffe08a;font-weight:bold'><td style='padding:0 8px'>3</td>" in timeline.table.value
    assert "overflow-y:auto" in timeline.table.value, "a long table scrolls inside its own box"
    assert (timeline.stepper.slider.min, timeline.stepper.slider.max) == (1, len(timeline.events))


def nested() -> nn.Sequential:
    return nn.Sequential(nn.Sequential(nn.Linear(1, 1), nn.ReLU()), nn.Linear(1, 1))


def test_apply_order_is_postorder_and_contrasts_children_and_modules():
    order = ApplyOrder(nested())
    assert order.visits == ["0.0", "0.1", "0", "1", ""]
    assert [(n.path, n.visit) for n in order.nodes] == [("", 5), ("0", 3), ("0.0", 1), ("0.1", 2), ("1", 4)]
    assert order.children == ["0", "1"]
    assert order.modules == ["", "0", "0.0", "0.1", "1"]
    assert "[3] 0: Sequential" in order.text()


def test_apply_order_steps_through_the_visits():
    order = ApplyOrder(nested())
    assert order.step == 0 and "[1]" not in order.drawing.value
    order.stepper.next.click()
    assert order.step == 1 and "[1] 0: Linear" in order.drawing.value and "[2]" not in order.drawing.value
    order.stepper.slider.value = 5
    assert "visited 5 of 5" in order.drawing.value


def test_module_explorer_lists_parameters_buffers_and_extra_repr():
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4))
    model[0].bias.requires_grad_(False)
    explorer = ModuleExplorer(model)
    root, conv, norm = explorer.rows
    assert (root.total, root.trainable) == (4 * 9 + 4 + 8, 4 * 9 + 8)
    assert conv.parameters == (("weight", (4, 1, 3, 3), 36, True), ("bias", (4,), 4, False))
    assert [b[0] for b in norm.buffers] == ["running_mean", "running_var", "num_batches_tracked"]
    assert "kernel_size=(3, 3)" in conv.extra_repr and conv.depth == 1
    assert "bias (4,) (frozen)" in explorer.text()
    assert explorer.expanded == []
    explorer.expand("1")
    assert explorer.expanded == ["", "1"]
    assert explorer.sections["0"].titles[0].endswith("— 40 parameters")


def test_gradient_flow_records_per_layer_norms_at_each_optimizer_step(two_layers):
    flow = GradientFlow(two_layers)
    optimizer = torch.optim.SGD(two_layers.parameters(), lr=0.1)
    handle = flow.watch(optimizer)
    for _ in range(3):
        optimizer.zero_grad()
        two_layers(torch.randn(8, 3)).sum().backward()
        expected = {name: math.sqrt(sum(float(p.grad.pow(2).sum()) for p in layer.parameters()))
                    for name, layer in two_layers.named_children()}
        optimizer.step()
        assert flow.norms[-1] == pytest.approx(expected)
    handle.remove()
    optimizer.step()
    assert len(flow.norms) == 3 and flow.layers == ["0", "1"]
    flow.refresh()
    assert flow.step == 2
    image = flow.image.value
    flow.stepper.back.click()
    assert flow.step == 1 and flow.image.value != image, "the chart follows the slider"
    assert "step 2/3" in flow.caption.value and flow.stepper.slider.value == 2, "slider and caption count alike"
    png_width = int.from_bytes(flow.image.value[16:20], "big")
    assert int(flow.image.width) * 2 == png_width, "drawn with twice the pixels it is shown with (sharp on retina)"


def test_gradient_flow_flags_vanishing_and_exploding_layers(two_layers):
    flow = GradientFlow(two_layers)
    two_layers[0].weight.grad, two_layers[0].bias.grad = torch.zeros(2, 3), torch.zeros(2)
    two_layers[1].weight.grad, two_layers[1].bias.grad = torch.full((1, 2), 1e4), torch.zeros(1)
    flow.record()
    assert flow.flags(0) == {"0": "vanishing", "1": "exploding"}
    two_layers.zero_grad()  # set_to_none: no gradient at all is not a vanishing one
    flow.record()
    assert flow.flags(1) == {"0": "no gradient", "1": "no gradient"}
    assert "no grad" in flow.text()
    flow.refresh()
    assert "no gradient" in flow.caption.value
    flow.stepper.back.click()
    assert "vanishing" in flow.caption.value


def test_function_playground_compares_straight_through_clamp_with_clamp():
    playground = FunctionPlayground()
    assert playground.at(2.0) == {"ClampSTE": (1.0, 1.0), "torch.clamp": (1.0, 0.0)}
    assert playground.at(0.5) == {"ClampSTE": (0.5, 1.0), "torch.clamp": (0.5, 1.0)}
    image, readout = playground.image.value, playground.readout.value
    playground.slider.value = 2.0
    assert playground.x == 2.0 and playground.image.value != image and playground.readout.value != readout
    assert "torch.clamp: f(+2.00) = +1.0000, f'(+2.00) = +0.0000" in playground.text()


def test_function_playground_takes_any_elementwise_pair():
    playground = FunctionPlayground(torch.nn.functional.softplus, lambda x: torch.log1p(torch.exp(x)),
                                    ("softplus", "log1p(exp)"))
    (value, grad), (ref_value, ref_grad) = playground.at(1.0).values()
    assert value == pytest.approx(ref_value) and grad == pytest.approx(1 / (1 + math.exp(-1.0)))


# Puzzle mode: the state machines in plain Python, then their widgets clicked through.

def test_order_puzzle_right_order_solves_in_one_try():
    puzzle = OrderPuzzle(["a", "b", "c"], seed=0)
    assert puzzle.choices != puzzle.answer and sorted(puzzle.choices) == ["a", "b", "c"], ("offered shuffled, never in "
                                                                                           "order")
    for key in "abc":
        puzzle.pick(key)
    assert puzzle.check() == [] and puzzle.solved and puzzle.over and puzzle.tries == 1
    assert puzzle.outcome() == "solved in 1 try"
    with pytest.raises(PuzzleError, match="over"):
        puzzle.pick("a")


def test_order_puzzle_reports_wrong_positions_and_counts_tries():
    puzzle = OrderPuzzle(["a", "b", "c", "d"], choices=["d", "c", "b", "a"])
    with pytest.raises(PuzzleError, match="pick all 4 first: 4 left"):
        puzzle.check()
    for key in "acbd":
        puzzle.pick(key)
    assert puzzle.check() == [1, 2] and not puzzle.solved and puzzle.tries == 1
    assert ("2. c ✗" in puzzle.status() and "1. a ✓" in puzzle.status()
            and "try 1: 2 wrong (position 2, 3)" in puzzle.status())
    puzzle.undo(), puzzle.undo(), puzzle.undo()
    assert puzzle.picked == ["a"] and not puzzle.checked
    for key in "bdc":
        puzzle.pick(key)
    assert puzzle.check() == [2, 3] and puzzle.tries == 2
    puzzle.reveal()
    assert puzzle.over and not puzzle.solved and puzzle.wrong == [2, 3]
    assert puzzle.outcome().startswith("answer shown after 2 tries")


def test_order_puzzle_cannot_pick_twice_undo_nothing_or_reveal_unchecked():
    puzzle = OrderPuzzle(["a", "b"], choices=["b", "a"])
    with pytest.raises(PuzzleError, match="nothing to undo"):
        puzzle.undo()
    puzzle.pick(0)
    with pytest.raises(PuzzleError, match="'b' is already picked"):
        puzzle.pick(0)
    with pytest.raises(PuzzleError, match="'b' is already picked"):
        puzzle.pick("b")
    with pytest.raises(PuzzleError, match="not one of the choices"):
        puzzle.pick("z")
    with pytest.raises(PuzzleError, match="check your order first"):
        puzzle.reveal()
    assert puzzle.picks == [0]


def test_order_puzzle_treats_repeated_keys_as_interchangeable():
    puzzle = OrderPuzzle(["x", "y", "x"], choices=["x", "x", "y"])
    for choice in (1, 2, 0):
        puzzle.pick(choice)
    assert puzzle.check() == [] and puzzle.solved


def test_timeline_puzzle_asks_for_the_events_of_its_kinds_and_reveals_the_real_timeline(two_layers):
    x = torch.randn(4, 3)
    plain = HookTimeline(two_layers, x)
    kinds = ("forward hook", "backward pre-hook", "backward hook")
    timeline = HookTimeline(two_layers, x, puzzle=kinds)
    assert timeline.events == plain.events
    assert timeline.puzzle.answer == [e.label for e in plain.events if e.kind in kinds]
    assert timeline.puzzle.answer[:3] == ["forward hook on 0 (Linear)", "forward hook on 1 (Linear)",
                                          "forward hook on model (Sequential)"]
    assert timeline.text().startswith("Puzzle: click these 9 events") and "tensors" not in timeline.text()
    assert timeline.table.value == "" and timeline.stepping.layout.display == "none", ("nothing of the answer shown "
                                                                                       "before")
    picker, answer = timeline.picker, timeline.puzzle.answer
    wrong_order = answer[:3] + answer[3:][::-1]
    for key in wrong_order:
        picker.buttons[next(i for i in timeline.puzzle.remaining if timeline.puzzle.choices[i] == key)].click()
    assert all(button.disabled for button in picker.buttons), "a picked choice can't be picked again"
    picker.check.click()
    assert timeline.puzzle.tries == 1 and timeline.hidden and "hooklab-wrong" in picker.status.value
    picker.show.click()
    assert not timeline.hidden and timeline.stepping.layout.display is None and timeline.step == 0
    wrong_events = [e.index + 1 for e, mark in zip(timeline.puzzle_events, wrong_order) if e.label != mark]
    rows = timeline.text().splitlines()[1:]
    assert timeline.text().startswith("answer shown after 1 try")
    assert [int(row.split()[0]) for row in rows[1:] if row.endswith("✗")] == wrong_events
    assert timeline.table.value.count("class='hooklab-wrong'") == len(wrong_events)
    timeline.stepper.next.click()
    assert timeline.step == 1, "the real timeline steps as without a puzzle"


def test_timeline_puzzle_solved_in_one_try_replays_from_the_first_event(two_layers):
    timeline = HookTimeline(two_layers, torch.randn(4, 3), puzzle=True)
    assert {e.kind for e in timeline.puzzle_events} == {"forward pre-hook", "forward hook", "backward pre-hook",
                                                        "backward hook", "tensor hook"}
    for key in timeline.puzzle.answer:
        timeline.puzzle.pick(key)
    timeline.picker.check.click()
    assert timeline.puzzle.solved and not timeline.hidden and "hooklab-wrong" not in timeline.table.value
    assert timeline.text().startswith("solved in 1 try")


def test_apply_order_puzzle_offers_the_tree_and_marks_wrong_guesses():
    plain, order = ApplyOrder(nested()), ApplyOrder(nested(), puzzle=True)
    assert order.puzzle.answer == plain.visits == ["0.0", "0.1", "0", "1", ""]
    assert order.puzzle.choices == ["", "0", "0.0", "0.1", "1"], "offered in tree order"
    assert order.text().splitlines()[2:4] == ["  a) model: Sequential", "  b) 0: Sequential"]
    assert order.drawing.value == "" and order.hidden
    for path in ["0.0", "0.1", "1", "0", ""]:  # the third and fourth swapped
        order.picker.buttons[order.puzzle.choices.index(path)].click()
    order.picker.check.click()
    assert order.puzzle.wrong == [2, 3] and order.puzzle.tries == 1
    order.picker.undo.click(), order.picker.undo.click(), order.picker.undo.click()
    for path in ["0", "1", ""]:
        order.picker.buttons[order.puzzle.choices.index(path)].click()
    order.picker.check.click()
    assert order.puzzle.solved and order.puzzle.tries == 2 and not order.hidden
    assert order.text().startswith("solved in 2 tries\napply visits") and "✗" not in order.text()
    assert order.step == 5 and "visited 5 of 5" in order.drawing.value


def test_apply_order_puzzle_revealed_shows_the_students_numbers():
    order = ApplyOrder(nested(), puzzle=True)
    for path in ["", "0", "0.0", "0.1", "1"]:  # preorder, as modules() lists them
        order.puzzle.pick(path)
    order.picker.check.click()
    order.picker.show.click()
    assert "[5] model: Sequential  ✗ you: 1" in order.text() and "[4] 1: Linear  ✗ you: 5" in order.text()
    assert order.drawing.value.count("class='hooklab-wrong'") == 5, "preorder gets every position wrong here"


def test_prediction_counts_tries_and_keeps_what_was_wrong():
    prediction = Prediction({"deep": "first", "shallow": "none"}, ["first", "last", "none"])
    prediction.pick("deep", "last")
    with pytest.raises(PuzzleError, match="predict shallow first"):
        prediction.check()
    with pytest.raises(PuzzleError, match="not one of the choices"):
        prediction.pick("shallow", "middle")
    prediction.pick("shallow", "none")
    assert prediction.check() == ["deep"] and prediction.tries == 1 and not prediction.over
    prediction.pick("deep", "first")
    assert prediction.check() == [] and prediction.solved and prediction.outcome() == "solved in 2 tries"


def test_vanishing_puzzle_sigmoid_gradients_vanish_toward_the_input_relu_kaiming_ones_do_not():
    state = torch.get_rng_state()
    puzzle = VanishingPuzzle(depth=8, width=16, seed=0)
    assert torch.equal(torch.get_rng_state(), state), "the notebook's random state is left alone"
    sigmoid, relu = puzzle.norms.values()
    assert len(sigmoid) == len(relu) == 8
    assert sigmoid[0] < 1e-4 * sigmoid[-1] and all(a < b for a, b in zip(sigmoid, sigmoid[1:]))
    assert max(relu) < 10 * min(relu)
    assert puzzle.prediction.answers == {"sigmoid, default init": "first layer",
                                         "ReLU, Kaiming init": "none: all within 10×"}
    network = next(iter(puzzle.networks.values()))
    flow = puzzle.flows["sigmoid, default init"]
    assert flow.layers == [name for name, m in network.named_children() if isinstance(m, nn.Linear)]
    assert sigmoid == [flow.norms[0][layer] for layer in flow.layers], "the norms GradientFlow records"
    assert puzzle.image.value == b"" and "e-0" not in puzzle.text(), "no norms shown before the prediction"
    first, second = puzzle.pickers.values()
    first.value, second.value = "last layer", "none: all within 10×"
    puzzle.check.click()
    assert puzzle.prediction.wrong == ["sigmoid, default init"] and "hooklab-wrong" in puzzle.status.value
    first.value = "first layer"
    puzzle.check.click()
    assert puzzle.prediction.solved and puzzle.puzzle.tries == 2
    assert puzzle.text().startswith("solved in 2 tries") and "layer 8" in puzzle.text()
    assert len(puzzle.image.value) > 10_000 and puzzle.image.layout.display is None, "the log-scale plot is shown"
