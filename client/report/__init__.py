"""Reports of one check for people and CI: text, Markdown, GitHub annotations, JUnit XML.

Every renderer is a pure function of a :class:`client.report.model.Report` (the receipt, the
credit table, the reasons and the run evidence) and returns text; nothing here runs, writes or
decides anything. May import :mod:`patchgate` and :mod:`client.verdict` only; the commands import
it.
"""
