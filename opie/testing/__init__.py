"""Support for running OPIE on Nova's in-process functional harness.

Used by OPIE's functional tests, ``benchmarks/scheduler.py`` and
``opie-bot demo``. Importing it needs Nova and its test packages (the
``functional`` extra).
"""
