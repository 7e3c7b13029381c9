"""pytest fixtures (executor): real daemons over real sockets. Loaded by tests/conftest.py."""
