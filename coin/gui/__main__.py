"""``python -m coin.gui``: the ``coin-qt`` console script (tests start it this way)."""

import sys

from coin.gui.app import main

sys.exit(main())
