"""The names of onnxruntime.capi.onnxruntime_inference_collection that scripts and onnxruntime's tests import:
the session classes, and check_and_normalize_provider_args with onnxruntime's contract."""

import warnings
from collections.abc import Sequence

from ..session import InferenceSession, IOBinding  # noqa: F401
from .._tessera import OrtValue  # noqa: F401


def check_and_normalize_provider_args(providers, provider_options, available_provider_names):
    """(provider names, [options dict with str keys and values]) from InferenceSession's `providers` (names or
    (name, options) tuples) and `provider_options` (a list of dicts, as long as `providers`). Raises ValueError for
    malformed arguments; a repeated provider is dropped with a UserWarning, as is (with a RuntimeWarning) one that
    `available_provider_names` lacks."""
    if providers is None:
        return [], []
    if not isinstance(providers, Sequence) or isinstance(providers, str):
        raise ValueError("'providers' should be a sequence.")
    if provider_options is not None:
        if not isinstance(provider_options, Sequence) or isinstance(provider_options, str):
            raise ValueError("'provider_options' should be a sequence.")
        if len(providers) != len(provider_options):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if not all(isinstance(options, dict) for options in provider_options):
            raise ValueError("'provider_options' values must be dicts.")
    names, options_list = [], []
    for i, provider in enumerate(providers):
        if isinstance(provider, str):
            name, options = provider, (provider_options[i] if provider_options is not None else {})
        elif isinstance(provider, tuple) and len(provider) == 2 and isinstance(provider[0], str) \
                and isinstance(provider[1], dict):
            if provider_options is not None:
                raise ValueError("Only one of 'providers' (name, options) tuples and 'provider_options' may "
                                 "give provider options.")
            name, options = provider
        else:
            raise ValueError("'providers' values must be either strings or (string, dict) tuples.")
        if name in names:
            warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.", UserWarning, stacklevel=2)
            continue
        if name not in available_provider_names:
            warnings.warn(f"Specified provider '{name}' is not in available provider names. Available providers: "
                          f"'{', '.join(available_provider_names)}'", RuntimeWarning, stacklevel=2)
            continue
        names.append(name)
        options_list.append({str(k): str(v) for k, v in options.items()})
    return names, options_list
