"""``python -m coincli`` runs coin-cli."""

import sys

from coincli.main import main

sys.exit(main())
