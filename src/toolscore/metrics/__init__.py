"""Toolscore 1.10's ``toolscore.metrics`` package path.

Thin modules for code written against Toolscore's documented paths: :mod:`.security`
(credential redaction) and :mod:`.policy` (forbidden-call rules). The checks themselves live in
:mod:`toolscore.checks`.
"""
