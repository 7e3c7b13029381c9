"""patchgate: the shared contract library imported by the signer, the executor and the client.

The contract: ``digest`` (canonical fixture digest v1, safe paths, hashing), ``pins`` (the pin files
and ``[tool.patchgate]``), ``schemas`` (their JSON Schemas), ``symbols`` (what a changed symbol and
a ``covers`` entry name), ``environment`` (the suite's environment and its digest), ``lockgaps``
(what a suite's lock leaves out), ``keys`` and ``envelope`` (Ed25519, DSSE, in-toto), ``report``
(signed run results), ``ledgers`` (ledger and receipt records), ``receipt_parts`` (the receipt's
parts as typed records), ``results`` (outcomes apart from transport records), ``vocabulary`` (the
closed sets of words, each a ``Literal`` type), ``evidence`` (what a person reads after a check),
``batching`` (which properties share a sandbox), ``errors``.

The wire and the daemons: ``request`` (the Execute request both ends read), ``executor_client`` and
``signer_client`` (the clients of both daemons), ``server``, ``callguard`` and ``peercred`` (both
daemons' plumbing, bounded calls, callers told apart), ``tls`` and ``pki`` (mTLS), ``addr``
(addresses), ``healthcheck``, ``logs``, ``v1/`` (the code generated from ``proto/``).

Tools: ``git`` (every git call), ``atomicfile`` (atomic writes), ``pytest_plugin`` and
``pytest_collect`` (the ``patchgate`` marker and its collection).
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
