"""What provisional words say about turn-taking (contracts.words), and the scenario's list."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from contracts.registry import ScenarioConfig
from contracts.words import (
    DEFAULT_BACKCHANNELS,
    is_backchannel,
    sentence_ending,
    unclear_backchannel,
)
from registries.loading import load_registry
from registries.validation import check_registry
from tests.conftest import RegistryWriter
from tests.unit.test_registry_loading import AGENTS, SCENARIO, TOOLS


@pytest.mark.parametrize(
    "text", ["Mm-hmm.", "Okay.", "okay, okay", "Yeah, sure.", "Uh-huh", "Right.", "I see.", ""]
)
def test_backchannels_by_default(text: str) -> None:
    assert is_backchannel(text, DEFAULT_BACKCHANNELS)


@pytest.mark.parametrize(
    "text",
    [
        "Wait, stop.",
        "Okay, wait.",
        "What?",
        "Yes.",  # an answer to a question the reply may end with
        "okay okay okay okay okay",  # too long for a backchannel
        "Okay, but what about my card?",
    ],
)
def test_interruptions(text: str) -> None:
    assert not is_backchannel(text, DEFAULT_BACKCHANNELS)


@pytest.mark.parametrize(
    "text",
    ["Mmm.", "M M", "M. M. M. M. M. M", "Mmmmmmmmmmm", "Hmm.", "Mhm", "Mmm, okay.", "M-N-N"],
)
def test_hums_as_whisper_spells_them_are_one_backchannel(text: str) -> None:
    # How Whisper tiny.en wrote one "mm-hmm" under the noise bench's beds.
    assert is_backchannel(text, DEFAULT_BACKCHANNELS)


def test_hums_pass_only_when_the_list_has_a_hum() -> None:
    assert is_backchannel("Mmmm", ["hmm"]) and is_backchannel("M M M", ["mm-hmm"])
    assert not is_backchannel("Mmmm", ["okay"])
    # Words with m and other letters are words, not hums.
    assert not is_backchannel("him", DEFAULT_BACKCHANNELS)
    assert not is_backchannel("No M", DEFAULT_BACKCHANNELS)
    assert not is_backchannel("Mm, wait.", DEFAULT_BACKCHANNELS)


@pytest.mark.parametrize(
    "text", ["and and and and", "and then,", "Um.", "Uh...", "Mm then", "Okay, and"]
)
def test_fillers_alone_do_not_take_the_turn(text: str) -> None:
    # The first two are how Whisper tiny.en wrote one "mm-hmm" under clatter and babble: a run
    # of one filler is one word.
    assert is_backchannel(text, DEFAULT_BACKCHANNELS)


@pytest.mark.parametrize(
    "text", ["Uh-uh.", "Uh uh", "And Amazon.", "So.", "And then what?", "Um, my card."]
)
def test_fillers_with_meaning_or_a_no_still_cut(text: str) -> None:
    # "Uh-uh" is "no"; "So." is how Whisper heard "Stop." under clatter.
    assert not is_backchannel(text, DEFAULT_BACKCHANNELS)


def test_fillers_pass_whatever_the_scenario_lists() -> None:
    assert is_backchannel("um and", ["got it"]) and not is_backchannel("um, okay", ["got it"])


def test_only_short_words_with_no_stop_in_them_are_unclear_backchannels() -> None:
    # How Whisper tiny.en misheard a noisy "yeah", "right" and "I see".
    for text in ("here.", "Light", "Bye, see."):
        assert unclear_backchannel(text, DEFAULT_BACKCHANNELS)
    for text in ("Okay.", "Stop.", "Hold on.", "Can I ask something?", "Yes.", ""):
        assert not unclear_backchannel(text, DEFAULT_BACKCHANNELS)


def test_multi_word_phrases_must_appear_whole() -> None:
    assert is_backchannel("All right.", DEFAULT_BACKCHANNELS)
    assert not is_backchannel("All.", DEFAULT_BACKCHANNELS)
    assert is_backchannel("go on, go on", ["go on"]) and not is_backchannel("go", ["go on"])


@pytest.mark.parametrize(
    ("text", "ending"),
    [
        ("What is my balance?", "complete"),
        ("I lost my card.", "complete"),
        ("Go on.", "complete"),
        ("I want to check my savings and", "trailing"),
        ("so um", "trailing"),
        ("My card number is 4532", "trailing"),
        ("it is four five three two.", "trailing"),
        ("I would like to know my balance and...", "trailing"),
        ("send it to the", "trailing"),
        ("checking balance", "open"),
        ("", "open"),
    ],
)
def test_how_words_end(text: str, ending: str) -> None:
    assert sentence_ending(text) == ending


def test_a_scenario_lists_its_own_backchannels() -> None:
    scenario = ScenarioConfig.model_validate({"name": "s", "backchannels": ["go on", "I see"]})
    assert scenario.backchannels == ("go on", "I see")
    assert ScenarioConfig(name="s").backchannels == DEFAULT_BACKCHANNELS


@pytest.mark.parametrize(
    ("phrases", "says"),
    [
        (["okay", "wait a second"], "contains 'wait', which always cuts the reply"),
        (["okay", "Okay"], "'Okay' is listed twice"),
        (["mm-hmm", "!!"], "must be 1 to 3 words"),
        (["that is so true right"], "must be 1 to 3 words"),
    ],
)
def test_a_backchannel_list_that_cannot_work_is_refused_with_the_reason(
    phrases: list[str], says: str
) -> None:
    with pytest.raises(ValidationError, match=says):
        ScenarioConfig.model_validate({"name": "s", "backchannels": phrases})


def test_scenario_check_names_the_file_and_field_of_a_bad_backchannel(
    write_registry: RegistryWriter,
) -> None:
    scenario = {**SCENARIO, "backchannels": ["mm-hmm", "stop there"]}
    root = write_registry(agents=AGENTS, scenarios={"demo": scenario}, tools=TOOLS)
    found = [str(problem) for problem in check_registry(load_registry(root))]
    assert any("scenario.yaml" in p and "backchannels" in p and "'stop'" in p for p in found), found
