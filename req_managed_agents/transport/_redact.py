"""Redaction now lives in the leaf :mod:`req_managed_agents._redact`; the providers' imports
still name it here."""

from req_managed_agents._redact import Secret, get_logger, redact, redact_value, register_secret

__all__ = ["Secret", "get_logger", "redact", "redact_value", "register_secret"]
