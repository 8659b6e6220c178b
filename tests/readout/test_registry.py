"""Read-outs found by name (vidcorr.readout.registry): a third read-out, registered here,
is used by the Matcher, the budget and evaluate.py without a change to any of them."""

import json

import numpy as np
import pytest

from vidcorr.errors import UserError
from vidcorr.readout import budget, registry
from vidcorr.readout.matching import Matcher
from vidcorr.readout.options import MatchOptions

SHIFT = np.array([1.5, -0.5])  # the stub's displacement from the middle frame to frame t+2
SECONDS_PER_POINT = 1e-3


class _Shift(registry.ReadOut):
    """Every point's match at ``p -/+ SHIFT`` with confidence 0.9: a known field."""

    calls = []

    @classmethod
    def level_cost(cls, spec, level, options):
        return SECONDS_PER_POINT * level.points, 1.0

    def read_out(self, pairs, points, stride, progress=False, desc="pixels"):
        _Shift.calls.append((len(pairs), len(points), stride))
        pos = np.stack([points - SHIFT, points + SHIFT], axis=1).astype(np.float64)
        n = len(pairs)
        return (np.repeat(pos[None], n, 0), np.ones((n, len(points), 2)),
                np.full((n, len(points)), 0.9))


@pytest.fixture
def shift():
    registry.register("shift", _Shift)
    _Shift.calls = []
    yield "shift"
    registry.unregister("shift")


def test_the_matcher_uses_a_registered_readout(shift, random_checkpoint, rng):
    matcher = Matcher(random_checkpoint, readout=shift, refine="none")
    a = rng.rand(32, 64, 3)
    m = matcher.match(a, a, stride=8, consistency=True)
    matcher.close()
    assert _Shift.calls == [(2, 32, 8)]  # the swapped pair in the same batch
    inside = (m.grid[:, 0] >= 2) & (m.grid[:, 1] >= 1) & (m.grid[:, 0] <= 61) & (
        m.grid[:, 1] <= 30)
    np.testing.assert_allclose(m.p1[inside], m.grid[inside] - SHIFT)
    np.testing.assert_allclose(m.p3[inside], m.grid[inside] + SHIFT)
    np.testing.assert_allclose(m.confidence, 0.9)
    # the swapped pair's matches are the same stub's: frame t+2 <-> frame t disagree by 2 SHIFT
    assert not m.valid.any()


def test_the_budget_prices_a_registered_readout(shift):
    from vidcorr.model.spec import NetworkSpec

    options = MatchOptions(readout=shift, refine="none", levels=2, max_seconds=1.0)
    est = budget.estimate(NetworkSpec(width=0.125), 64, 96, 8, options)
    points = 8 * 12 + 4 * 6  # the finest grid, then the half-size level's at stride 8
    assert est.points == points
    assert est.seconds == pytest.approx(SECONDS_PER_POINT * points)
    with pytest.raises(UserError, match="would take"):  # and refuses by it
        budget.check_budget(NetworkSpec(width=0.125), 64 * 40, 96 * 40, 8, options, ram_mb=1e9)


def test_evaluate_scores_a_registered_readout(shift, tmp_path, capsys):
    from tests.evaluation.test_evaluate import _shifted_pair, _write_pair

    from vidcorr.apps.cli import evaluate_main

    paths = _write_pair(tmp_path, _shifted_pair(shift=3, h=32, w=64))
    out = str(tmp_path / "eval")
    code = evaluate_main(["--untrained", "0.125", "--pairs", "", "--gt-pair"] + paths +
                         ["--methods", "zero", "--stride", "8", "--readout", shift,
                          "--refine", "none", "--out", out, "--no-progress"])
    assert code == 0, capsys.readouterr().err
    with open(out + ".json") as f:
        report = json.load(f)
    row = next(r for r in report["matching"] if r["method"].startswith("vidcorr"))
    # the stub's flow t -> t+2 is 2 SHIFT = (3, -1) against the truth (3, 0): 1 px off
    assert row["median_epe"] == pytest.approx(1.0, abs=1e-6)
    assert _Shift.calls


def test_names_and_refusals(shift, random_checkpoint):
    assert registry.names()[:3] == ("auto", "kernel", "sensitivity") and shift in registry.names()
    with pytest.raises(UserError, match="taken or reserved"):
        registry.register("kernel", _Shift)

    class Partial(registry.ReadOut):
        def read_out(self, pairs, points, stride, progress=False, desc="pixels"):
            return None

    with pytest.raises(UserError, match="read-out 'partial' must define level_cost"):
        registry.register("partial", Partial)
    assert "partial" not in registry.names()
    with pytest.raises(UserError, match="readout must be one of auto, kernel, sensitivity, "
                                        "shift"):
        MatchOptions(readout="blend")
    with pytest.raises(UserError, match="needs a network with a kernel head"):
        Matcher(random_checkpoint, readout="kernel")
    registry.unregister(shift)
    with pytest.raises(UserError, match="readout must be one of"):
        MatchOptions(readout=shift)
