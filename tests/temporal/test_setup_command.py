"""`baton setup` against a real dev server started without Baton's search attributes: it
registers the namespace and the attributes, a call then upserts them, and a second run finds
everything in place."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import timedelta

from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from baton.temporal_server import (
    DevServerOptions,
    EmbeddedTemporal,
    find_temporal_binary,
    server_command,
)
from baton.temporal_setup import indexed_value_type
from contracts.temporal import SEARCH_ATTRIBUTES
from runtime.temporal_client import connect
from tests.fakes.cloud_frontend import CloudLikeFrontend
from tests.workflow.conftest import Stack, started

NAMESPACE = "baton-setup-test"


async def _baton_setup(*argv: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "baton.cli", "setup", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )


async def _custom_attributes(client: Client, namespace: str) -> dict[str, int]:
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace), timeout=timedelta(seconds=5)
    )
    return dict(listed.custom_attributes)


def test_the_dev_server_gets_no_search_attribute_flags() -> None:
    options = DevServerOptions()
    assert options.search_attributes  # registered after start instead, by setup's code
    assert "--search-attribute" not in server_command(find_temporal_binary(), options, 7300, 0)


async def test_setup_prepares_a_bare_server_then_a_call_upserts_and_a_rerun_changes_nothing() -> (
    None
):
    bare = DevServerOptions(search_attributes=())
    async with EmbeddedTemporal(bare) as server:
        plain = await Client.connect(server.address)
        assert not set(SEARCH_ATTRIBUTES) & set(await _custom_attributes(plain, "default"))

        first = await _baton_setup("--address", server.address, "--namespace", NAMESPACE)
        assert first.returncode == 0, first.stderr
        assert f"namespace {NAMESPACE}: registered" in first.stdout
        for name, kind in SEARCH_ATTRIBUTES.items():
            assert f"search attribute {name} ({kind}): added" in first.stdout
        listed = await _custom_attributes(plain, NAMESPACE)
        for name, kind in SEARCH_ATTRIBUTES.items():
            assert listed.get(name) == indexed_value_type(kind), name

        client = await connect(server.address, namespace=NAMESPACE)
        stack = Stack(client)
        await stack.start_workers()
        try:
            session = stack.call()
            await started(session)
            query = (
                f"WorkflowId = '{session.workflow_id}' AND BatonScenario = 'banking' "
                "AND BatonStatus = 'active' AND BatonActiveAgent = 'Concierge'"
            )
            found: list[str] = []
            for _ in range(200):  # visibility is eventually consistent
                found = [w.id async for w in client.list_workflows(query)]
                if found:
                    break
                await asyncio.sleep(0.05)
            assert found == [session.workflow_id]
            await session.hang_up()
        finally:
            await stack.stop_workers()

        second = await _baton_setup("--address", server.address, "--namespace", NAMESPACE)
        assert second.returncode == 0, second.stderr
        assert f"namespace {NAMESPACE}: already exists" in second.stdout
        for name, kind in SEARCH_ATTRIBUTES.items():
            assert f"search attribute {name} ({kind}): already exists" in second.stdout
        assert "added" not in second.stdout and "registered" not in second.stdout


async def test_setup_refuses_an_attribute_of_another_type_and_says_which() -> None:
    clashing = DevServerOptions(search_attributes=(("BatonStatus", "Text"),))
    async with EmbeddedTemporal(clashing) as server:
        done = await _baton_setup("--address", server.address)
        assert done.returncode == 1
        assert "BatonStatus is INDEXED_VALUE_TYPE_TEXT, Baton needs Keyword" in done.stderr
        assert "Traceback" not in done.stderr
        # Nothing was added beside the clash: setup changes nothing it cannot finish.
        plain = await Client.connect(server.address)
        assert set(SEARCH_ATTRIBUTES) & set(await _custom_attributes(plain, "default")) == {
            "BatonStatus"
        }


async def test_setup_with_no_server_says_how_to_get_one() -> None:
    done = await _baton_setup("--address", "127.0.0.1:1", "--wait", "1")
    assert done.returncode == 1
    assert "cannot reach a Temporal server at 127.0.0.1:1" in done.stderr
    assert "Traceback" not in done.stderr


# --- a cluster that keeps namespaces and search attributes to its own console ----------------

KEYWORD = indexed_value_type("Keyword")
ALL_OF_BATONS = {name: indexed_value_type(kind) for name, kind in SEARCH_ATTRIBUTES.items()}


async def test_on_a_managed_cluster_with_everything_in_place_setup_only_checks() -> None:
    async with CloudLikeFrontend({"calls.acct": dict(ALL_OF_BATONS)}) as frontend:
        done = await _baton_setup("--address", frontend.address, "--namespace", "calls.acct")
        assert done.returncode == 0, done.stderr
        assert "namespace calls.acct: already exists" in done.stdout
        assert done.stdout.count(": already exists") == 1 + len(SEARCH_ATTRIBUTES)
        assert "RegisterNamespace" not in frontend.calls
        assert "AddSearchAttributes" not in frontend.calls


async def test_on_a_managed_cluster_missing_attributes_are_reported_with_the_command() -> None:
    async with CloudLikeFrontend({"calls.acct": {"BatonScenario": KEYWORD}}) as frontend:
        done = await _baton_setup("--address", frontend.address, "--namespace", "calls.acct")
        assert done.returncode == 1
        assert "namespace calls.acct: already exists" in done.stdout
        assert "does not let Baton add them" in done.stderr
        missing = [name for name in SEARCH_ATTRIBUTES if name != "BatonScenario"]
        flags = " ".join(f"--sa {name}={SEARCH_ATTRIBUTES[name]}" for name in missing)
        assert f"tcld namespace search-attributes add -n calls.acct {flags}" in done.stderr
        assert "Traceback" not in done.stderr


async def test_on_a_managed_cluster_a_missing_namespace_is_reported_not_created() -> None:
    async with CloudLikeFrontend({}) as frontend:
        done = await _baton_setup("--address", frontend.address, "--namespace", "calls.acct")
        assert done.returncode == 1
        assert "namespace 'calls.acct' does not exist" in done.stderr
        assert "tcld namespace create" in done.stderr and "Traceback" not in done.stderr
        assert frontend.calls == ["DescribeNamespace", "RegisterNamespace"]
