"""patchgate-executord: verifies fixture envelopes, runs admitted suites in Docker sandboxes."""

__all__: list[str] = []
