#!/usr/bin/env python3
"""Run textutils' test suite the way Django runs its own.

Examples::

    ./tests/runtests.py                                  # every test package under tests/
    ./tests/runtests.py --verbosity 2 template_tests     # one package, one line per test
    ./tests/runtests.py utils_tests.test_text.TruncateMiddleTests.test_odd_length
"""

import argparse
import os
import sys

RUNTESTS_DIR = os.path.abspath(os.path.dirname(__file__))
REPO_ROOT = os.path.dirname(RUNTESTS_DIR)

# The test packages are importable by their own names (as in Django: "template_tests", not "tests.template_tests"),
# and the library under test comes from this checkout, not from an installed copy.
for path in (REPO_ROOT, RUNTESTS_DIR):
    if path not in sys.path:
        sys.path.insert(0, path)

try:
    import django
except ImportError as exc:
    raise RuntimeError("Django is not installed: the test suite needs it (pip install Django)") from exc

from django.conf import settings  # noqa: E402
from django.test.utils import get_runner  # noqa: E402


def get_test_modules():
    """The test packages: every folder of tests/ that has an __init__.py."""
    for name in sorted(os.listdir(RUNTESTS_DIR)):
        if os.path.isfile(os.path.join(RUNTESTS_DIR, name, "__init__.py")):
            yield name


def django_tests(verbosity, failfast, parallel, test_labels, test_name_patterns):
    if verbosity >= 1:
        print(f"Testing against Django installed in '{os.path.dirname(django.__file__)}'")
    django.setup()
    TestRunner = get_runner(settings)
    runner = TestRunner(
        verbosity=verbosity,
        interactive=False,
        failfast=failfast,
        parallel=parallel,
        test_name_patterns=test_name_patterns,
    )
    return runner.run_tests(test_labels or list(get_test_modules()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Run the textutils test suite.")
    parser.add_argument(
        "modules",
        nargs="*",
        metavar="module",
        help='Optional test labels, e.g. "template_tests" or "utils_tests.test_text.InitialsTests".',
    )
    parser.add_argument(
        "-v",
        "--verbosity",
        default=1,
        type=int,
        choices=[0, 1, 2, 3],
        help="Verbosity level; 0=minimal output, 1=normal output, 2=all output",
    )
    parser.add_argument(
        "--settings",
        help='Python path to settings module, e.g. "myproject.settings". If this isn\'t provided, '
        'either the DJANGO_SETTINGS_MODULE environment variable or "test_sqlite" will be used.',
    )
    parser.add_argument("--failfast", action="store_true", help="Stop running the test suite after first failed test.")
    parser.add_argument(
        "--parallel",
        type=int,
        default=1,
        metavar="N",
        help="Run tests using up to N parallel processes (default: 1).",
    )
    parser.add_argument(
        "-k",
        dest="test_name_patterns",
        action="append",
        help="Only run test methods and classes matching test name pattern. Same as unittest -k option. "
        "Can be used multiple times.",
    )
    options = parser.parse_args()

    if options.settings:
        os.environ["DJANGO_SETTINGS_MODULE"] = options.settings
    else:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "test_sqlite")
        options.settings = os.environ["DJANGO_SETTINGS_MODULE"]

    failures = django_tests(
        options.verbosity, options.failfast, options.parallel, options.modules, options.test_name_patterns
    )
    sys.exit(bool(failures))
