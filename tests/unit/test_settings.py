"""Settings and options: every HEADFORMS_* variable listed in one place, the general ones parsed
when asked for and the hosted-only ones read together into one value (Limits), each with its own
one-line error; the analysis options one checked, hashable value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headforms import settings as config
from headforms.errors import LimitError, NotAllowedError, OptionError
from headforms.hosted.limits import Limits
from headforms.hosted.policy import Policy, policy_in_force
from headforms.options import AnalysisOptions


def test_a_snapshot_holds_the_headforms_variables_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.THREADS_ENV, "3")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    values = config.settings()
    assert values.threads == 3 and "HF_HUB_OFFLINE" not in values.environ
    monkeypatch.setenv(config.THREADS_ENV, "5")
    assert values.threads == 3 and config.settings().threads == 5  # read again at each call


@pytest.mark.parametrize(
    ("variable", "value", "read", "error", "message"),
    [
        (config.THREADS_ENV, "two", "threads", OptionError, "HEADFORMS_THREADS='two' is not a"),
        (config.NICE_ENV, "20", "limits", LimitError, "not a niceness from 0 to 19"),
        (config.MEMORY_ENV, "-1", "limits", LimitError, "not a positive number"),
        (config.SECONDS_ENV, "nan", "limits", LimitError, "not a positive number"),
        (config.MAX_BYTES_ENV, "1G", "limits", NotAllowedError, "not a whole number"),
        (config.TRUSTED_PROXIES_ENV, "proxy", "limits", LimitError, "not an address or a"),
    ],
)
def test_a_bad_value_is_one_line_when_its_setting_is_read(
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    read: str,
    error: type[Exception],
    message: str,
) -> None:
    for name in (config.THREADS_ENV, config.NICE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, value)
    values = config.settings()
    # only what reads the bad variable fails: a private run never reads hosted mode's limits
    assert values.prompt_tokens >= 1
    if read == "limits":
        assert values.threads >= 1
    with pytest.raises(error, match=message) as info:
        values.threads if read == "threads" else Limits.from_env()  # noqa: B018 - reading raises
    assert "\n" not in str(info.value)


def test_defaults_and_lists(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (config.ROOTS_ENV, config.ALLOWLIST_ENV, config.NICE_ENV, config.MEMORY_ENV):
        monkeypatch.delenv(name, raising=False)
    limits = Limits.from_env()
    assert (limits.nice, limits.memory) == (10, 2 * 2**30)
    assert limits.model_roots == () and limits.hub_allowlist == ()
    monkeypatch.setenv(config.ROOTS_ENV, f" {tmp_path} :")
    monkeypatch.setenv(config.ALLOWLIST_ENV, "gpt2, org/* ,")
    limits = Limits.from_env()
    assert limits.model_roots == (tmp_path.resolve(),)
    assert limits.hub_allowlist == ("gpt2", "org/*")
    assert not hasattr(config.settings(), "model_roots")  # one source: the hosted limits


def test_the_policy_in_force_follows_hosted_mode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(config.HOSTED_ENV, "no")
    assert policy_in_force() is None
    monkeypatch.setenv(config.HOSTED_ENV, "1")
    monkeypatch.setenv(config.ROOTS_ENV, str(tmp_path))
    policy = policy_in_force()
    assert isinstance(policy, Policy) and policy.roots == (tmp_path.resolve(),)
    monkeypatch.setenv(config.MAX_BYTES_ENV, "12345")
    assert policy_in_force().max_bytes == 12345


def test_options_are_checked_once_and_travel_as_one_value() -> None:
    options = AnalysisOptions(5, False, ("sv_a",))
    assert options.spectra == {"eig_s", "lobe_pos", "lobe_neg", "sv_a"}
    assert options == AnalysisOptions(5, 0, ["sv_a", "eig_s"]) and len({options, options}) == 1
    assert AnalysisOptions.from_dict(json.loads(json.dumps(options.as_dict()))) == options
    assert options.key() == {"rope_position": 5, "fold_qk_norm": False}
    assert options.with_spectra(["eig_l_abs"]).spectra >= {"sv_a", "eig_l_abs"}
    for bad, message in [
        ({"rope_position": 2.5}, "not a whole number|out of range"),
        ({"rope_position": 10**8}, r"out of range \(a whole number, \|d\| <= 10\^7\)"),
        ({"rope_position": "x"}, "is not a whole number"),
        ({"spectra": ("eig_x",)}, "unknown spectra"),
    ]:
        with pytest.raises(OptionError, match=message):
            AnalysisOptions(**bad)


def test_budgets_configured_under_their_old_per_session_names_keep_their_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for new, old in config.RENAMED.items():
        monkeypatch.delenv(new, raising=False)
        monkeypatch.delenv(old, raising=False)
    assert Limits.from_env().visitor_analyses == config.DEFAULT_VISITOR_ANALYSES
    monkeypatch.setenv("HEADFORMS_SESSION_ANALYSES", "3")
    monkeypatch.setenv("HEADFORMS_SESSION_SAMPLES", "4")
    limits = Limits.from_env()
    assert (limits.visitor_analyses, limits.visitor_samples) == (3, 4)
    monkeypatch.setenv(config.VISITOR_ANALYSES_ENV, "5")  # the new name wins
    assert Limits.from_env().visitor_analyses == 5
    monkeypatch.setenv("HEADFORMS_SESSION_SAMPLES", "x")
    with pytest.raises(LimitError, match="HEADFORMS_SESSION_SAMPLES='x'"):
        Limits.from_env()
