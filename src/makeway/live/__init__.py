"""The live service: the same models driven by wall time, API requests and agent reports (see docs/service-protocol.md)."""
