"""The package version, kept in one place (read by ``setup.cfg`` and ``rma --version``)."""

__version__ = "0.1.0.dev0"
