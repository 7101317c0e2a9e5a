"""On ACS a `sip` escalation target names a person's VoIP identity (ACS has no SIP-URI
participant): the registry accepts ACS and Teams user ids beside SIP URIs, and refuses any
other address naming both forms."""

from __future__ import annotations

import pytest

from tests.conftest import RegistryWriter
from tests.unit.test_escalation_targets import problems


@pytest.mark.parametrize(
    "address", ["sip:desk@pbx.example", "8:acs:resource_0000001f-user", "8:orgid:5c3a-user"]
)
def test_a_sip_target_may_be_a_sip_uri_or_an_acs_or_teams_user(
    write_registry: RegistryWriter, address: str
) -> None:
    assert problems(write_registry, {"default_target": {"kind": "sip", "address": address}}) == []


def test_any_other_sip_address_is_refused_naming_both_forms(
    write_registry: RegistryWriter,
) -> None:
    found = problems(write_registry, {"default_target": {"kind": "sip", "address": "desk@pbx"}})
    assert any(
        "escalation.default_target" in p and "sip:desk@pbx.example" in p and "8:acs:" in p
        for p in found
    ), found
