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
    channel.expect("n0")  # another request: its lines are not n1's, and nothing after its end is kept
    kernel.sendall(b'{"sent": "before any request"}\nn1 start\n{"a": 1}\nn0 end 0\nn1 start\n')
    assert channel.take().ended
    channel.expect("n1")
    kernel.sendall(b'{"before": "its start"}\nn1 before {"digest": "d"}\nn1 start\n{"a": 1}\n')
    kernel.sendall(b'{"b": 2}\n\nn1 after {"digest": "e"}\n\nn1 end 2\n{"after": "its end"}\n')
    answers = channel.take()
    assert answers.ended and answers.observed == ['{"a": 1}', '{"b": 2}']
    assert answers.words == {"before": '{"digest": "d"}', "after": '{"digest": "e"}'}


def test_a_request_without_its_start_or_end_has_no_observations(channel):
    kernel = channel.kernel_end
    channel.expect("n1")
    kernel.sendall(b'{"a": 1}\nn1 end 0\n')
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
    kernel.sendall(b"n1 end 1000000\n")
    answers = channel.take()
    assert answers.ended and answers.observed is None
    channel.expect("n2")  # a later request is not hurt by the flood before it
    kernel.sendall(b"n2 start\n" + b'{"a": 1}\n' + b"n2 end 1\n")
    assert channel.take().observed == ['{"a": 1}']


def test_a_line_longer_than_the_limit_is_dropped_as_it_comes(channel):
    kernel = channel.kernel_end
    channel.expect("n1")
    kernel.sendall(b"n1 start\n" + b"y" * (client.ANSWER_SIZE + 10) + b'\n{"a": 1}\nn1 end 1\n')
    answers = channel.take()
    assert answers.ended and answers.observed is None
    assert not channel._pieces


def test_lines_written_around_the_checkers_leave_the_request_without_answers_or_observations(channel):
    """Code that learnt a request's nonce could speak for the agent; the agent says each word once, END last, and
    counts the checkers' observations, so a second START (emptying what the test observed), a second answer, an END
    before the agent's, or lines written on the channel besides the checkers' (a count that differs) leave nothing to
    trust: the test fails, the notebook is held (the probe did not answer)."""
    kernel = channel.kernel_end
    for forged, words in ((b'n start\n{"forged": 1}\n', {}),  # the test's observations emptied
                          (b'n after {"digest": "forged"}\n', {}),  # the probe's answer given twice
                          (b'{"forged": 1}\n', {"after": '{"digest": "d"}'}),  # a line the checkers did not send
                          (b'n end 1\n', {})):  # an END before the agent's: the agent's words come after it
        channel.expect("n")
        kernel.sendall(b'\nn start\n{"real": 1}\n' + forged + b'\nn after {"digest": "d"}\n\nn end 1\n')
        answers = channel.take()
        assert answers.ended and answers.observed is None and answers.words == words, forged


def test_an_unfinished_line_does_not_swallow_the_agents_next_line(channel):
    kernel = channel.kernel_end
    channel.expect("n")
    kernel.sendall(b'\nn start\n{"real": 1}\n{"unfinished": ' + b'\nn end 1\n')
    answers = channel.take()
    assert answers.ended and answers.observed is None  # two lines kept, one observation counted
    channel.expect("m")
    kernel.sendall(b'\nm start\n{"real": 1}\n\nm end 1\n')
    assert channel.take().observed == ['{"real": 1}']


def test_the_graders_clients_receive_no_kernel_message_over_the_limit():
    """One kernel message cannot take the grading process's memory: ZeroMQ drops one over MESSAGE_SIZE (the output
    limits cut outputs far below it). Measured: a kernel displaying 40 outputs of 100 MB left the grading processes
    at 150 MiB, its neighbour graded in full."""
    import zmq

    grader = client.ReadyClient()  # held: it closes its context when it goes
    socket = grader.context.socket(zmq.SUB)
    try:
        assert socket.getsockopt(zmq.MAXMSGSIZE) == client.MESSAGE_SIZE == 64 << 20
    finally:
        socket.close()


def test_only_observe_sends_a_function_put_in_the_senders_place_that_passes_records_on_sends_nothing():
    """The sender the agent connects (observations._senders) writes what observations.observe hands it, and nothing a
    function put in its place hands it (the swap a test cell could make and undo before it ends): the record is not
    sent nor counted, and the grader, short of an observation, fails the test."""
    import os

    from hooklab import observations

    read_end, write_end = os.pipe()
    send, _, sent = observations._senders(write_end)
    cell = compile("observe('equal', 'x', {'type': 'int', 'value': '1'})\n"
                   "def forged(record):\n    record['value'] = {'type': 'int', 'value': '2'}\n    real(record)\n"
                   "state['send'] = forged\nobserve('equal', 'y', {'type': 'int', 'value': '1'})\n", "cell.py", "exec")
    saved = dict(observations._state)
    try:
        observations._state["send"] = send
        exec(cell, {"observe": observations.observe, "real": send, "state": observations._state})
    finally:
        observations._state.update(saved)
        os.close(write_end)
    with os.fdopen(read_end) as lines:
        written = lines.read().splitlines()
    assert sent() == 1 and len(written) == 1, written
    assert '"label":"x"' in written[0] and '"value":"1"' in written[0]
