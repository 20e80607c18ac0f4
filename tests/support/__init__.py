"""Helpers shared by the test suite: tools that count their calls, raw emulator requests, the
official SDKs aimed at the emulators, ``rma`` in-process, and a private ``redis-server``."""
