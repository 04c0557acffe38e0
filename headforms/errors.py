"""Errors with one-line, user-facing messages: what was wrong and what is accepted."""

from __future__ import annotations


class HeadformsError(Exception):
    """Base class: the message is shown as-is to users (CLI line, dashboard `st.error`)."""


class ModelSpecError(HeadformsError):
    """The model spec names nothing usable (missing path, malformed hub id, not a model)."""


class UnsupportedArchitectureError(HeadformsError):
    """The model's architecture is not in the architecture table."""


class CorruptFileError(HeadformsError):
    """A weight file is truncated, malformed or inconsistent with its config."""


class HubUnavailableError(HeadformsError):
    """The Hugging Face hub cannot be reached (or the model is not in the local cache)."""


class NoSuchModelError(ModelSpecError, HubUnavailableError):
    """The spec names no model this machine has: not bundled, not a local path, and a hub id
    neither the hub (off or unreachable) nor the local hub cache can serve."""


class NotAllowedError(HeadformsError):
    """Hosted mode refused the request (path outside the roots, not allow-listed, too large)."""


class OptionError(HeadformsError):
    """An analysis or output option does not apply (RoPE position on a non-RoPE model, ...)."""


class UnavailableDataError(HeadformsError):
    """What a view needs is not in this model's data (a published table has no spectra, or no
    model dim N for a Gaussian baseline)."""


class LimitError(HeadformsError):
    """Hosted mode stopped or refused work at one of its limits (an analysis's memory or time,
    the server's concurrent analyses, a session's new computations)."""
