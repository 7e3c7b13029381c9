"""Local lanes: a signer and an executor started as separate processes on this machine.

``local`` brings a lane up and down (keys, sockets, pid files, settings), ``state`` says where a
lane keeps them and the settings file ``check`` reads, ``daemons`` starts and
stops one daemon process by pid, ``engine`` makes sure a Docker engine answers. Used by the ``up``,
``down`` and ``demo`` commands; imports only :mod:`patchgate` and the standard library.
"""

__all__: list[str] = []
