"""Root conftest: loads the integration fixture plugins (one module per area, so areas don't collide)."""

pytest_plugins = [
    "tests.integration.fixtures_signer",
    "tests.integration.fixtures_executor",
    "tests.integration.fixtures_gate",
]
