"""Reports of one check for people and CI: ``text``, ``markdown``, ``github`` (annotations) and
``junit`` (XML), over what they share in ``model``.

Every renderer is a pure function of a :class:`client.report.model.Report` (the receipt, the
credit table, the reasons and the run evidence) and returns text; nothing here runs, writes or
decides anything. May import :mod:`patchgate` and :mod:`client.verdict` only; the commands import
it.
"""
