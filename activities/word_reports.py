"""Telling the gateway what a caller segment's words mean for turn-taking, as soon as they exist.

The gateway decides two things on a caller's words while they are still provisional: whether
speech over a reply was only a backchannel (resume the reply) or an interruption (cut it), and
how long its endpointer should still wait (a finished question ends sooner, a trailing "and"
later). It holds neither the recognizer nor the scenario, so the speech worker answers both with
`contracts.words` and sends only the answers (`ReportWords`), never the words.
"""

from __future__ import annotations

import grpc
from temporalio import activity

from contracts.proto import media_pb2
from contracts.proto.media_pb2_grpc import MediaPlaneStub
from contracts.speech import TranscriptionRequest
from contracts.words import is_backchannel, sentence_ending

#: A report is a hint: a gateway that does not answer at once is not waited for.
REPORT_TIMEOUT_SECONDS = 2.0


async def report_words(
    stub: MediaPlaneStub,
    request: TranscriptionRequest,
    text: str,
    *,
    final: bool,
    revision: int = 0,
) -> bool:
    """Tell the gateway about `text` (of provisional audio `revision`, 0 for the final audio);
    True when it resumed the reply paused under the segment.

    A gateway that cannot be told (gone, older, busy) costs nothing but the hint: the reply
    it paused is cut by its own deadline and the words are answered as a turn."""
    held = request.backchannels is not None
    words = media_pb2.SegmentWords(
        call_id=request.call_id,
        segment_ref=request.segment_ref,
        final=final,
        backchannel=held and is_backchannel(text, request.backchannels or ()),
        ending=sentence_ending(text),
        revision=revision,
    )
    try:
        outcome = await stub.ReportWords(words, timeout=REPORT_TIMEOUT_SECONDS)
    except grpc.aio.AioRpcError as error:
        activity.logger.info(
            "gateway not told about the words of %s: %s", request.segment_ref, error.code().name
        )
        return False
    return held and outcome.resumed
