"""How results look to a person: notebook (HTML and Markdown) renderings of the vocabulary,
the view of a ``verbose=True`` run, and the progress line of long waits. Importing it (the
package root does) plugs the renderings and the view into the vocabulary's hooks."""

from req_managed_agents.display import _notebook, _progress  # noqa: F401 - plugged in on import
from req_managed_agents.display._progress_line import ProgressLine

__all__ = ["ProgressLine"]
