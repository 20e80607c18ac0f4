"""``python -m req_managed_agents`` is the same as ``rma``."""

import sys

from req_managed_agents.cli._main import main

sys.exit(main())
