"""The grader's end of a kernel's observation channel (hooklab.grading.kernels.client.ObservationChannel): it keeps
the awaited request's answers and observations and nothing else, within its limits, whatever a kernel sends."""

from __future__ import annotations

import pytest

from hooklab.grading.kernels import client
from hooklab.grading.kernels.client import ObservationChannel


@pytest.fixture
def channel():
    channel = ObservationChannel(limit=1000)
    yield channel
    channel.close()


def test_a_request_gets_its_answers_and_the_observations_between_its_start_and_end(channel):
    kernel = channel.kernel_end
    kernel.sendall(b'{"sent": "before any request"}\nn1 start\n{"a": 1}\n')  # nothing awaited yet: dropped
    channel.expect("n1")
    kernel.sendall(b'{"before": "its start"}\nn1 before {"digest": "d"}\nn1 start\n{"a": 1}\n')
    kernel.sendall(b'{"b": 2}\nn1 after {"digest": "e"}\nn1 end\n{"after": "its end"}\n')
    answers = channel.take()
    assert answers.ended and answers.observed == ['{"a": 1}', '{"b": 2}']
    assert answers.words == {"before": '{"digest": "d"}', "after": '{"digest": "e"}'}


def test_a_request_without_its_start_or_end_has_no_observations(channel):
    kernel = channel.kernel_end
    channel.expect("n1")
    kernel.sendall(b'{"a": 1}\nn1 end\n')
    assert channel.take().observed is None  # no start: observations of no test
    channel.expect("n2")
    kernel.sendall(b'n2 start\n{"a": 1}\n')
    answers = channel.take(timeout=0.2)
    assert not answers.ended and answers.observed is None  # its end never came


def test_a_flood_of_short_lines_keeps_the_graders_memory_within_the_limit(channel):
    """A kernel that sends millions of tiny lines, before a request, outside its test or inside it, costs the
    grader at most the limit (each line counted with LINE_COST more): past it, the test's observations are
    dropped and the take says so."""
    kernel = channel.kernel_end
    flood = b"x\n" * 1_000_000
    channel.expect("n1")
    kernel.sendall(flood + b"n1 start\n" + flood + b"n1 before {}\n")
    with channel._changed:
        channel._changed.wait_for(lambda: "before" in channel._answers.words, 30)
        held = channel._answers.observed
        overflow = channel._overflow
    assert held == [] and overflow, "the reader kept lines past the limit, or did not get through the flood"
    kernel.sendall(b"n1 end\n")
    answers = channel.take()
    assert answers.ended and answers.observed is None
    channel.expect("n2")  # a later request is not hurt by the flood before it
    kernel.sendall(b"n2 start\n" + b'{"a": 1}\n' + b"n2 end\n")
    assert channel.take().observed == ['{"a": 1}']


def test_a_line_longer_than_the_limit_is_dropped_as_it_comes(channel):
    kernel = channel.kernel_end
    channel.expect("n1")
    kernel.sendall(b"n1 start\n" + b"y" * (client.ANSWER_SIZE + 10) + b'\n{"a": 1}\nn1 end\n')
    answers = channel.take()
    assert answers.ended and answers.observed is None
    assert len(channel._partial) == 0
