"""``python -m tests.reference.connect prepare``."""

import sys

from . import main

sys.exit(main())
