#!/usr/bin/env bash
# Runs the Python client's tests (unittest). Prints a closing line "N passed, N failed" and exits non-zero on
# any failure. Skipped tests (e.g. end to end without a built daemon) are counted and named, not failed.
set -uo pipefail
cd "$(dirname "$0")"
exec python3 - "$@" <<'EOF'
import sys
import unittest

suite = unittest.defaultTestLoader.discover(".", pattern="test_*.py")
result = unittest.TextTestRunner(verbosity=2, stream=sys.stderr).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
passed = result.testsRun - failed - skipped
for test, reason in result.skipped:
    print("skipped: %s: %s" % (test.id(), reason))
if result.testsRun == 0:
    failed += 1
    print("no tests ran")
if skipped:
    print("%d skipped" % skipped)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
EOF
