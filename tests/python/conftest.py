"""pytest setup: use the build tree's package and the simulated testing device.

Run as `PYTHONPATH=build/python /usr/bin/python3 -m pytest -q tests/python` (scripts/test.sh does).
Without PYTHONPATH the build tree is found relative to this file (BUILD_DIR, default build/)."""

import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BUILD = os.path.join(_REPO, os.environ.get("BUILD_DIR", "build"))

if not any(os.path.isfile(os.path.join(p, "tessera", "__init__.py")) for p in sys.path if p):
    sys.path.insert(0, os.path.join(_BUILD, "python"))
# The testing EP registers on import only when this names its library.
_TESTING_LIBRARY = os.path.join(_BUILD, "libtessera_testing_ep.so")
if "TESSERA_TESTING_EP_PATH" not in os.environ and os.path.isfile(_TESTING_LIBRARY):
    os.environ["TESSERA_TESTING_EP_PATH"] = _TESTING_LIBRARY
