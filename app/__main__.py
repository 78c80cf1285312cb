"""`python -m app` — same as the `headroom` command."""

import sys

from app.main import main

sys.exit(main())
