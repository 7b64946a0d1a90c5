"""Errors that reach users: each carries a message that names the field and the problem."""


class MakewayError(Exception):
    """Base of the errors the CLI turns into one line on stderr and exit status 2."""


class ConfigError(MakewayError):
    """A config, manifest or trace is invalid; the message names the field path and the problem."""


class TraceError(MakewayError):
    """A trace record cannot be read (strict mode) or a trace file cannot be opened."""
