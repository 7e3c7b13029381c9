"""A named sandbox image (not ``host``): the project's own image runs the billing properties.

``patchgate/patchgate:local`` (``compose/build-images.sh``, built here when missing: a minute or two
the first time) has ``/opt/patchgate/bin`` first on its PATH, with python and pytest there. The
executor must give its sandboxes the image's own PATH, not the host's Python.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchgate.executor_client import ExecutorClient
from patchgate.request import ExecuteRequest
from tests.integration.fixtures_executor import REPO, billing_case, prop, start_executor

pytestmark = [pytest.mark.integration, pytest.mark.docker, pytest.mark.slow]

IMAGE = "patchgate/patchgate:local"
WHERE = f"""
import os
import sys


def test_runs_the_images_python():
    assert sys.executable.startswith("/opt/patchgate/"), sys.executable
    assert os.environ["PATH"].split(":")[0] == "/opt/patchgate/bin", os.environ["PATH"]
    assert not os.path.exists({sys.prefix!r}), "the host Python must not be mounted"
"""


def _present(image: str) -> bool:
    got = subprocess.run(["docker", "image", "inspect", image], capture_output=True, check=False)
    return got.returncode == 0


@pytest.fixture(scope="session")
def patchgate_image(docker_engine: None) -> str:
    """The project's image; built with compose/build-images.sh when it is not there yet."""
    if not _present(IMAGE):
        subprocess.run(
            [str(REPO / "compose" / "build-images.sh")], check=True, timeout=1200,
            stdin=subprocess.DEVNULL, cwd=REPO,
        )  # fmt: skip
    assert _present(IMAGE), f"{IMAGE} was not built"
    return IMAGE


@pytest.fixture
def image_executor(patchgate_image: str, operator_key, tmp_path: Path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    daemon = start_executor(tmp_path, operator_key.keyring_path, "--image", patchgate_image)
    try:
        yield daemon.address
    finally:
        daemon.stop()


def test_billing_property_runs_in_the_named_image(
    image_executor: str,
    operator_key,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    case = billing_case(
        tmp_path,
        operator_key.signer,
        extra_files={"properties/test_where.py": WHERE},
        properties=(
            prop("billing.prorate.non_negative",
                 "properties/test_billing.py::test_prorate_non_negative"),
            prop("where", "properties/test_where.py::test_runs_the_images_python"),
        ),
    )  # fmt: skip
    with ExecutorClient(image_executor) as client:
        result = client.execute(
            ExecuteRequest(
                envelope=case.envelope,
                workspace=case.workspace,
                fixture_root="fixtures",
                properties=case.properties,
            )
        )
    assert result.transport == ()
    got = {(o.property_id, o.run_index): (o.outcome, o.failure_signature) for o in result.outcomes}
    assert got == {
        ("billing.prorate.non_negative", 1): ("pass", ""),
        ("billing.prorate.non_negative", 2): ("pass", ""),
        ("where", 1): ("pass", ""),
        ("where", 2): ("pass", ""),
    }
    assert result.sandbox["image"] == IMAGE
