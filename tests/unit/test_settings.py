"""One typed settings object lists every environment variable Baton reads."""

from __future__ import annotations

import re
from pathlib import Path

from runtime.settings import Settings, settings, settings_table

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = (
    *("contracts", "runtime", "registries", "workflows"),
    *("activities", "workers", "media_gateway", "baton"),
)


def test_the_readme_table_is_the_one_the_settings_class_prints() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- settings table -->\n", 1)[1].split("\n<!-- end settings", 1)[0]
    assert block == settings_table()


def test_every_variable_named_in_the_code_is_a_setting() -> None:
    named: set[str] = set()
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            named.update(re.findall(r'"((?:BATON|AZURE|OPENAI)_[A-Z0-9_]+)"', path.read_text()))
    assert named - set(Settings.variables()) == set()


def test_blank_values_count_as_unset_and_the_first_alias_wins() -> None:
    config = settings({"BATON_DATA_DIR": "  ", "BATON_OPENAI_API_KEY": "a", "OPENAI_API_KEY": "b"})
    assert config.data_dir is None
    assert config.openai_api_key == "a"
    assert settings({"OPENAI_API_KEY": " b "}).openai_api_key == "b"


def test_a_changed_environment_is_seen_at_the_next_read(monkeypatch) -> None:
    monkeypatch.setenv("BATON_LOG_LEVEL", "debug")
    assert settings().log_level == "debug"
    monkeypatch.setenv("BATON_LOG_LEVEL", "error")
    assert settings().log_level == "error"
