"""patchgate: the shared contract library imported by the signer, the executor and the client.

Modules: :mod:`patchgate.digest` (canonical fixture digest v1), :mod:`patchgate.pins` (human pins),
:mod:`patchgate.keys` and :mod:`patchgate.envelope` (Ed25519, DSSE, in-toto),
:mod:`patchgate.ledgers` (ledger and receipt records, atomic writes), :mod:`patchgate.errors`.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
