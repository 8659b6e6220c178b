"""Errors that mean "the user asked for something wrong", reported in one line."""

__all__ = ["UserError"]


class UserError(ValueError):
    """A bad config, file, path or argument. Scripts print it without a traceback."""
