"""The `ember` command the tests run (EMBER_BIN, which CTest sets): tests that need it call
require_ember_bin() in setUpModule."""

import os
import unittest

EMBER_BIN = os.environ.get("EMBER_BIN", "")


def require_ember_bin():
    """Skips the module where EMBER_BIN is not an executable; under CI=true that fails instead
    (CI always builds it: a skip there is a failure)."""
    if not EMBER_BIN or not os.access(EMBER_BIN, os.X_OK):
        message = f"EMBER_BIN (the ember command) is {EMBER_BIN!r}; CTest sets it"
        if os.environ.get("CI") == "true":
            raise RuntimeError(message)
        raise unittest.SkipTest(message)
