"""``python -m req_managed_agents`` is the same as ``rma``."""

import sys

from req_managed_agents._cli import main

sys.exit(main())
