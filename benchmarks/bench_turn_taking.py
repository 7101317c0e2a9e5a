"""Turn-taking bench: backchannels over a reply, and the adaptive endpointer against the fixed one.

    python -m benchmarks.bench_turn_taking [--calls 8] [--parts endpointer,stack]
        [--modes fixed,adaptive] [--word-wait-ms 2000] [--max-word-wait-ms 2000,6000]
        [--windows full,fitted] [--rounds 2]

Prints figures, asserts nothing.

* ``endpointer`` (offline, no servers): the gateway's VAD (Silero) and endpointer, fixed and
  adaptive, in the same run over the offline voice saying sentences whole and sentences with a
  half-second pause mid-thought (after "and", "um", or between groups of digits). The words of
  the audio handed over at the pause come from Whisper tiny.en itself, delivered after the time
  it actually took on this machine plus ``--dispatch-ms`` (the Temporal round trip to the speech
  worker). Prints how many sentences were cut in two, and the quiet each whole sentence waited.
* ``stack``: the real thing (benchmarks/voice_stack.py: the dev server, a `baton worker` and a
  `baton gateway` process) once per endpointer. Backchannels and interruptions are spoken over
  the greeting: how many cut it (from the call's own transcript: a barge-in item or a
  backchannel item) and onset -> playback stopped; then end of speech -> first reply audio
  (bench_voice's response measure), fixed and adaptive side by side. With several
  ``--max-word-wait-ms`` caps each runs in turn: ``2000`` is the fixed 2 s wait of before, the
  default ``6000`` lets the wait follow the recognizer's pace (media_gateway/recognizer_pace.py).
* ``response``: end of speech -> first reply audio only (bench_voice's measure and its parts),
  for every endpointer in ``--modes`` and offline recognizer window in ``--windows``
  (``BATON_WHISPER_WINDOW``: ``full`` is the 30 s window of before); each combination gets a
  fresh stack and ``--calls`` calls per round (after one not counted), the combinations taking
  turns for ``--rounds`` rounds so a machine's changing load falls on all alike. Prints each
  p50 as a ratio of the first combination's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import secrets
import signal
import statistics
import time
from datetime import datetime

from activities.speech_providers.offline_whisper import WhisperRecognizer
from baton.call_client import CallSession
from benchmarks.bench_voice import response_time
from benchmarks.stats import line
from benchmarks.voice_stack import Stack, first_audio, hang_up, open_caller, stream
from contracts.calls import CallInput
from contracts.words import sentence_ending
from media_gateway.gateway_config import ADAPTIVE_ENDPOINTING, FIXED_ENDPOINTING, GatewayConfig
from media_gateway.silero_vad import SileroClassifier
from media_gateway.vad import (
    FRAME_BYTES,
    FRAME_MS,
    Endpointer,
    EndpointerConfig,
    SpeechEnded,
    SpeechPaused,
    SpeechStarted,
)
from runtime.temporal_client import connect
from tests.gateway.conftest import speech_pcm

BACKCHANNELS = ("Okay.", "Yeah.", "Right.", "Uh-huh.", "Sure.", "Mm-hmm.", "Okay, okay.", "I see.")
INTERRUPTIONS = (
    "Wait, stop.",
    "Hold on.",
    "What?",
    "No, that's wrong.",
    "Excuse me.",
    "Can I ask something?",
    "Stop.",
    "Okay, but what about my card?",
)
WHOLE = (
    "What is my balance?",
    "I lost my card yesterday.",
    "Can you send me a new card?",
    "I need to speak to someone about a loan.",
)
#: (first part, second part): said with `PAUSE_MS` of quiet between, one utterance meant.
PAUSED = (
    ("I want to check my savings and", "my checking account too."),
    ("My card number is 4 5 3 2", "1 2 3 4."),
    ("So, um", "I think someone stole my card."),
    ("I would like to move money from my savings to", "my checking account."),
)
PAUSE_MS = 500
QUIET = bytes(FRAME_BYTES)


#: How long Whisper took on each provisional audio (ms), printed with the figures.
RECOGNITION_MS: list[float] = []


async def recognize(recognizer: WhisperRecognizer, pcm: bytes) -> tuple[str, float]:
    """Whisper tiny.en's words for `pcm`, and how long it took (ms)."""
    start = time.perf_counter()
    words = (await recognizer.recognize(pcm)).text
    RECOGNITION_MS.append((time.perf_counter() - start) * 1000)
    return words, RECOGNITION_MS[-1]


async def endpoint(
    recognizer: WhisperRecognizer, config: EndpointerConfig, audio: bytes, dispatch_ms: float
) -> list[tuple[int, int]]:
    """Feed `audio` then 1.5 s of quiet; the words of each paused audio arrive once Whisper
    would have them. Returns, per utterance (``SpeechEnded``), the quiet frames it waited and
    the frames from the end of speech until the words of all of it were in: those of the
    audio handed over at its last pause when the end added nothing, else recognized then."""
    endpointer = Endpointer(config, classifier=SileroClassifier())
    frames = [audio[i : i + FRAME_BYTES] for i in range(0, len(audio), FRAME_BYTES)]
    frames += [QUIET] * (1500 // FRAME_MS)
    words_due: tuple[int, str] | None = None
    paused: tuple[bytes, int] = (b"", 0)  # the audio handed over last, and when its words came
    ends: list[tuple[int, int]] = []
    for index, frame in enumerate(frames):
        events = endpointer.feed(frame)
        for event in events:
            if isinstance(event, SpeechPaused):
                text, took_ms = await recognize(recognizer, event.audio)
                words_due = (index + round((took_ms + dispatch_ms) / FRAME_MS), text)
                paused = (event.audio, words_due[0])
        if words_due is not None and index >= words_due[0]:
            events += endpointer.words_end(sentence_ending(words_due[1]))
            words_due = None
        for event in events:
            if not isinstance(event, SpeechEnded):
                continue
            spoke_until = event.at_ms // FRAME_MS
            if event.audio == paused[0]:
                words_at = max(index, paused[1])
            else:
                _, took_ms = await recognize(recognizer, event.audio)
                words_at = index + round((took_ms + dispatch_ms) / FRAME_MS)
            ends.append((index + 1 - spoke_until, words_at + 1 - spoke_until))
    return ends


async def endpointer_part(dispatch_ms: float) -> None:
    gap = bytes(PAUSE_MS * 32)
    whole = [await speech_pcm(text) for text in WHOLE]
    paused = [await speech_pcm(a) + gap + await speech_pcm(b) for a, b in PAUSED]
    lead = bytes(300 * 32)
    recognizer = WhisperRecognizer()
    recognizer.warm_up()
    print(f"endpointer: {len(WHOLE)} whole sentences, {len(PAUSED)} with a {PAUSE_MS} ms pause")
    for name, config in (("fixed", FIXED_ENDPOINTING), ("adaptive", ADAPTIVE_ENDPOINTING)):
        waits = [await endpoint(recognizer, config, lead + a, dispatch_ms) for a in whole]
        splits = [await endpoint(recognizer, config, lead + a, dispatch_ms) for a in paused]
        cut = sum(1 for ends in splits if len(ends) > 1)
        cut_ones = [a for (a, _), ends in zip(PAUSED, splits, strict=True) if len(ends) > 1]
        missed = sum(1 for ends in waits + splits if not ends)
        kept = [ends[-1] for ends in splits if len(ends) == 1]  # paused, and not cut in two
        print(f"  {name:<9} paused sentences cut in two: {cut} of {len(PAUSED)}; missed: {missed}")
        print(f"    cut: {cut_ones}")
        whole_ends = [ends[-1] for ends in waits if ends]
        for label, found in (("a whole sentence", whole_ends), ("a paused one, kept whole", kept)):
            line(f"{name}: quiet before {label} ended", [q * FRAME_MS * 1.0 for q, _ in found])
            line(f"{name}: ... its words all in", [w * FRAME_MS * 1.0 for _, w in found])
    line("Whisper on the audio handed over at the pause", RECOGNITION_MS)
    await onsets()


async def onsets() -> None:
    """When the VAD pauses a reply for each phrase said over it: from the start of its first
    frame to the end of the frame that completes `SpeechStarted`. The stack's onset is when
    that first frame is sent, the frame completing it leaves 20 ms before its end, so the
    stack's "onset -> playback stopped" is this less 20 ms plus the machine's own time."""
    print("onset -> speech confirmed (the reply pauses), by phrase, Silero VAD")
    waits: list[float] = []
    for words in BACKCHANNELS + INTERRUPTIONS:
        pcm = await speech_pcm(words)
        endpointer = GatewayConfig(media_address="127.0.0.1:0").new_endpointer()
        for n in range(len(pcm) // FRAME_BYTES):
            frame = pcm[n * FRAME_BYTES : (n + 1) * FRAME_BYTES]
            if any(isinstance(e, SpeechStarted) for e in endpointer.feed(frame)):
                waits.append((n + 1) * FRAME_MS)
                print(f"    {words!r:34} {waits[-1]} ms")
                break
        else:
            print(f"    {words!r:34} never")
    line("onset -> speech confirmed", waits)


async def over_the_greeting(stack: Stack, words: str) -> tuple[str, float, float, str]:
    """Say `words` a second into a call's greeting: "cut" or "resumed", onset -> playback
    stopped (ms), onset -> the decision recorded in the workflow (ms), and what was heard."""
    client = await connect(stack.temporal.address)
    caller = await open_caller(stack)
    await first_audio(caller, timeout=90)
    await asyncio.sleep(1.0)
    clears = caller.cleared
    onset, onset_wall = time.monotonic(), time.time()
    sender = asyncio.create_task(stream(caller, await speech_pcm(words), silence_ms=1200))
    async with asyncio.timeout(10):
        while caller.cleared == clears:
            await asyncio.sleep(0.001)
    stopped_ms = (time.monotonic() - onset) * 1000
    session = CallSession(client, CallInput(call_id=caller.call_id))
    items = await session.wait_for(
        lambda t: any(i["type"] in ("barge_in", "backchannel") for i in t), timeout=30
    )
    decision = next(i for i in items if i["type"] in ("barge_in", "backchannel"))
    decided_ms = (datetime.fromisoformat(str(decision["at"])).timestamp() - onset_wall) * 1000
    cut = decision["type"] == "barge_in"
    if cut:  # what the recognizer made of it: the turn that answers it says
        items = await session.wait_for(lambda t: any(i["type"] == "user_turn" for i in t), 30)
    heard = next(i["text"] for i in items if i["type"] in ("user_turn", "backchannel"))
    await sender
    await hang_up(caller)
    return ("cut" if cut else "resumed"), stopped_ms, decided_ms, heard


async def stack_part(calls: int, modes: list[str], word_wait_ms: int, caps: list[int]) -> None:
    totals: dict[str, list[float]] = {}
    for mode, cap in ((mode, cap) for mode in modes for cap in caps):
        options: tuple[str, ...] = ("--endpointing", mode, "--word-wait-ms", str(word_wait_ms))
        options += ("--max-word-wait-ms", str(cap))
        stack = Stack(secrets.token_bytes(32), gateway_args=options)
        try:
            await stack.start()
            print(f"\n== gateway {' '.join(options)}")
            stopped: list[float] = []
            decided: dict[str, list[float]] = {"cut": [], "resumed": []}
            for label, phrases in (
                ("backchannels", BACKCHANNELS),
                ("interruptions", INTERRUPTIONS),
            ):
                outcomes = []
                for words in phrases:
                    try:
                        outcome, stopped_ms, decided_ms, heard = await over_the_greeting(
                            stack, words
                        )
                    except TimeoutError:  # a loaded machine: say so, and go on
                        print(f"    {words!r:34} -> no answer in time")
                        continue
                    outcomes.append(outcome)
                    stopped.append(stopped_ms)
                    decided[outcome].append(decided_ms)
                    print(
                        f"    {words!r:34} -> {outcome:8} stopped in {stopped_ms:3.0f} ms,"
                        f" heard {heard!r}"
                    )
                print(f"  {label}: {outcomes.count('cut')} of {len(outcomes)} cut the reply")
            line("barge-in onset -> playback stopped", stopped)
            line("onset -> workflow recorded the cut", decided["cut"])
            line("onset -> workflow recorded the backchannel", decided["resumed"])
            if calls:
                client = await connect(stack.temporal.address)
                key = mode if len(caps) == 1 else f"{mode}, max wait {cap} ms"
                totals[key] = (await response_time(stack, client, calls))["total"]
        finally:
            await stack.close()
    print("\nend of speech -> first reply audio, side by side")
    for mode, samples in totals.items():
        line(mode, samples)
    if {"adaptive", "fixed"} <= totals.keys() and all(totals.values()):
        ratio = statistics.median(totals["adaptive"]) / statistics.median(totals["fixed"])
        print(f"  adaptive / fixed p50: {ratio:.2f}")


async def response_part(calls: int, rounds: int, modes: list[str], windows: list[str]) -> None:
    combos = [(mode, window) for mode in modes for window in windows]
    parts: dict[tuple[str, str], dict[str, list[float]]] = {combo: {} for combo in combos}
    loads: list[float] = []
    for round_ in range(rounds):
        for mode, window in combos:
            stack = Stack(
                secrets.token_bytes(32),
                gateway_args=("--endpointing", mode),
                worker_env={"BATON_WHISPER_WINDOW": window},
            )
            try:
                await stack.start()
                loads.append(os.getloadavg()[0])
                print(f"\n== round {round_ + 1}: {mode} endpointer, {window} window")
                client = await connect(stack.temporal.address)
                # A fresh worker's first turn loads what it runs lazily (it was 0.7-1.3 s
                # slower whichever the window): one call first, not counted.
                with contextlib.redirect_stdout(io.StringIO()):
                    await response_time(stack, client, 1)
                for name, samples in (await response_time(stack, client, calls)).items():
                    parts[(mode, window)].setdefault(name, []).extend(samples)
            finally:
                await stack.close()
    print(
        f"\nend of speech -> first reply audio, side by side (load {min(loads):.1f}-"
        f"{max(loads):.1f})"
    )
    base = statistics.median(parts[combos[0]]["total"])
    for combo in combos:
        got = parts[combo]
        line(f"{combo[0]} endpointer, {combo[1]} window", got["total"])
        ratio = statistics.median(got["total"]) / base
        # A recognizer still busy after the scenario's 1.5 s has a filler said: that is the
        # first audio measured, and the recognition span is still open in the history.
        clean = [n for n, stt in enumerate(got["stt"]) if stt >= 0]
        medians = {
            name: statistics.median([v[n] for n in clean]) if clean else float("nan")
            for name, v in got.items()
            if name != "total"
        }
        print(
            f"    x{ratio:.2f} of {combos[0][0]}/{combos[0][1]}; "
            f"{len(got['stt']) - len(clean)} of {len(got['stt'])} heard a filler first; "
            "p50 of the parts of the others: "
            + ", ".join(f"{name} {value:.0f}" for name, value in medians.items())
        )


async def main(args: argparse.Namespace) -> None:
    # `timeout` and friends send SIGTERM: cancel, so each stack's `finally` still stops it.
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    parts = args.parts.split(",")
    if "endpointer" in parts:
        await endpointer_part(args.dispatch_ms)
    if "stack" in parts:
        caps = [int(cap) for cap in args.max_word_wait_ms.split(",")]
        await stack_part(args.calls, args.modes.split(","), args.word_wait_ms, caps)
    if "response" in parts:
        windows = args.windows.split(",")
        await response_part(args.calls, args.rounds, args.modes.split(","), windows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--parts", default="endpointer,stack")
    parser.add_argument("--dispatch-ms", type=float, default=40.0)
    parser.add_argument("--modes", default="fixed,adaptive", help="gateway --endpointing values")
    # The gateway's default; a loaded machine's recognizer may need more (the bench says).
    parser.add_argument("--word-wait-ms", type=int, default=2000)
    parser.add_argument("--max-word-wait-ms", default="6000", help="caps to compare: 2000,6000")
    parser.add_argument("--windows", default="full,fitted", help="BATON_WHISPER_WINDOW values")
    parser.add_argument("--rounds", type=int, default=2, help="response: turns per combination")
    asyncio.run(main(parser.parse_args()))
