"""pytest fixtures (signer): real daemons over real sockets. Loaded by tests/conftest.py."""
