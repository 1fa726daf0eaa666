"""The widgets, driven through their widget controls and checked through their data."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from hooklab.widgets import ApplyOrder, FunctionPlayground, GradientFlow, HookTimeline, ModuleExplorer, record_events


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
        expected = {name: math.sqrt(sum(float(p.grad.pow(2).sum()) for p in layer.parameters())) for name, layer in two_layers.named_children()}
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
    flow.refresh()
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
    playground = FunctionPlayground(torch.nn.functional.softplus, lambda x: torch.log1p(torch.exp(x)), ("softplus", "log1p(exp)"))
    (value, grad), (ref_value, ref_grad) = playground.at(1.0).values()
    assert value == pytest.approx(ref_value) and grad == pytest.approx(1 / (1 + math.exp(-1.0)))
