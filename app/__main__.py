"""`python -m app` — same as the `headroom` command."""

import sys

from app.core.interrupts import note_interrupts

note_interrupts()  # from the first moment: Ctrl+C during the imports below is "interrupted", not a traceback
try:
    from app.main import main
except KeyboardInterrupt:
    print("\nheadroom: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
