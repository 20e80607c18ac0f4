"""The vocabulary: frozen values every other layer speaks (usage, tool calls and results,
turn and session results, stream items). Pure data; it imports nothing of the package but
:mod:`req_managed_agents.errors`. Internal: the public names are re-exported at the top."""
