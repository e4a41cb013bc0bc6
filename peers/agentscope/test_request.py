"""The request the Rust decoder test reads is what agentscope-runtime's models dump today."""

from make_request import GOLDEN, build_request, request_body

from agentscope_peer import client_events, data_objects


def test_the_golden_request_is_current():
    assert GOLDEN.read_text(encoding="utf-8") == request_body(), "run python make_request.py"


def test_their_client_sends_that_body():
    wire = (GOLDEN.parent / "text.sse").read_bytes()
    events, sent = client_events(wire, build_request())
    assert len(events) == len(data_objects(wire))
    assert sent == build_request().model_dump(exclude_none=True)
