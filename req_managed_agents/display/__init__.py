"""How results look to a person: notebook (HTML and Markdown) renderings of the vocabulary
and the live progress line. Internal."""
