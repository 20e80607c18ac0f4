"""``python -m req_managed_agents`` is the same as ``rma``."""

import sys

from req_managed_agents.cli._main import main

exit_code = main()
# CPython's ``-m`` runner kills the process with SIGINT at exit if a KeyboardInterrupt ever
# ended a string eval (a dataclass being built in a lazy import, say), even one main() caught
# and turned into exit code 130. Each string eval resets that flag, so one clean eval keeps
# the exit code main() chose.
eval("None")
sys.exit(exit_code)
