"""The Execute request as the domain sees it, without grpc: kept in :mod:`patchgate.request`,
below both roles, and named here for the executor's modules."""

from __future__ import annotations

from patchgate.request import CodeTarget, ExecuteInput, PropertyRun, TreeItem, Variant

__all__ = ["CodeTarget", "ExecuteInput", "PropertyRun", "TreeItem", "Variant"]
