"""pytest fixtures (gate): real daemons over real sockets. Loaded by tests/conftest.py."""
