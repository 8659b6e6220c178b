"""The time and memory guard: estimates against closed forms, refusals before any work."""

import re
import time

import numpy as np
import pytest

from vidcorr.readout import budget
from vidcorr.errors import UserError
from vidcorr.readout.matching import Matcher
from vidcorr.readout.options import REFINE_SAMPLERS, MatchOptions
from vidcorr.model.spec import NetworkSpec, layer_plan, plan_flops
from vidcorr.readout.kernel import readout as kernel_readout
from vidcorr.readout.sensitivity import readout as sensitivity_readout

SPEC = NetworkSpec(width=0.25, output_kernel=1, kernel_size=9)
SENSITIVITY = MatchOptions(readout="sensitivity", refine="none")
SECONDS_PER_GFLOP = sensitivity_readout.SECONDS_PER_GFLOP


def _levels(n, **changes):
    return SENSITIVITY.replace(levels=n, **changes)


def test_estimate_adds_up_points_and_flops_over_levels():
    est = budget.estimate(SPEC, 259, 384, 8, _levels(3))
    # build_pyramid's sizes (rounded down), each level's grid at stride 8 in its own pixels
    grids = [(33 * 48, 259, 384), (17 * 24, 129, 192), (8 * 12, 64, 96)]
    assert est.points == sum(n for n, _, _ in grids)
    seconds = sum(n * plan_flops(layer_plan(SPEC, h, w), 9) / 1e9 * SECONDS_PER_GFLOP
                  for n, h, w in grids)
    assert est.seconds == pytest.approx(seconds)
    twice = budget.estimate(SPEC, 259, 384, 8, _levels(3), pairs=2)
    assert twice.points == 2 * est.points and twice.seconds == pytest.approx(2 * est.seconds)
    # a larger image costs more per point: the grid's time grows faster than its points
    big = budget.estimate(SPEC, 512, 768, 8, _levels(1))
    small = budget.estimate(SPEC, 256, 384, 8, _levels(1))
    assert big.points == 4 * small.points and big.seconds > 12 * small.seconds


def test_check_budget_refuses_with_a_size_that_fits():
    options = _levels(3, max_seconds=3600)
    fits = budget.check_budget(SPEC, 259, 384, 8, options, ram_mb=24000)
    assert fits.seconds < 3600
    with pytest.raises(UserError) as err:
        budget.check_budget(SPEC, 3000, 4000, 8, options, ram_mb=24000)
    message = str(err.value)
    assert "4000x3000 pair at stride 8" in message and "(over the 60 min limit)" in message
    assert "of memory" in message  # its forward pass alone is beyond 24 GB
    assert message.count("--stride") == 1 and message.count("--max-size") == 1, message
    size = int(re.search(r"--max-size (\d+)", message).group(1))
    scale = size / 4000.0
    h, w = int(round(3000 * scale)), int(round(4000 * scale))
    assert budget.estimate(SPEC, h, w, 8, _levels(3)).seconds <= 3600
    bigger = size + 32
    h, w = int(round(3000 * bigger / 4000.0)), int(round(4000 * bigger / 4000.0))
    assert budget.estimate(SPEC, h, w, 8, _levels(3)).seconds > 3600  # the largest that fits
    # no time limit: only the memory can refuse
    with pytest.raises(UserError, match="of memory"):
        budget.check_budget(SPEC, 3000, 4000, 8, options.replace(max_seconds=0), ram_mb=24000)
    budget.check_budget(SPEC, 3000, 4000, 8, options.replace(max_seconds=0), ram_mb=10 ** 7)
    with pytest.raises(UserError) as err:  # nothing fits: no --max-size, the stride once
        budget.check_budget(SPEC, 3000, 4000, 8, options, ram_mb=1)
    message = str(err.value)
    assert "use a larger --stride, or raise the limit" in message and "--max-size" not in \
        message and message.count("--stride") == 1, message


def test_matcher_refuses_a_huge_pair_before_building(random_checkpoint):
    matcher = Matcher(random_checkpoint, max_seconds=60)
    huge = np.zeros((3000, 4000, 3), np.uint8)
    start = time.time()
    with pytest.raises(UserError, match="--max-size"):
        matcher.match(huge, huge, stride=8)
    assert time.time() - start < 30 and matcher.build_seconds == 0  # nothing was built
    matcher.close()


def test_pixel_extent_is_a_window_only_beyond_the_receptive_field():
    """MIND reaches about 250 pixels each way: small images are covered whole, large ones
    by a window of about 500 pixels a side, and the estimated time per point stops growing."""
    from vidcorr.readout.sensitivity.memory import pixel_extent
    from vidcorr.model.spec import receptive_radius

    spec = NetworkSpec(width=0.25, output_kernel=1, kernel_size=9, skips=(4, 3, 2, 1, 0))
    radius = receptive_radius(layer_plan(spec, 128, 384))
    assert 200 < radius < 300
    assert pixel_extent(spec, 128, 384) == (128, 384)
    assert pixel_extent(spec, 720, 1280) == (2 * radius + 2, 2 * radius + 2)
    per_point = [budget.estimate(spec, h, w, 8, _levels(1)).seconds /
                 budget.estimate(spec, h, w, 8, _levels(1)).points
                 for h, w in ((720, 1280), (1440, 2560))]
    assert abs(per_point[1] / per_point[0] - 1) < 0.05


def test_the_finer_read_out_is_counted():
    """upsample=2 reads the base grid again on a pair of 2(n-1)+1 pixels a side."""
    from vidcorr.readout.sensitivity.memory import pixel_extent

    spec = NetworkSpec(width=0.25, output_kernel=1, kernel_size=9, skips=(4, 3, 2, 1, 0))
    base = budget.estimate(spec, 288, 384, 8, _levels(3))
    finer = budget.estimate(spec, 288, 384, 8, _levels(3, upsample=2))
    assert finer.points == base.points + 36 * 48
    gflop = plan_flops(layer_plan(spec, *pixel_extent(spec, 575, 767)), 9) / 1e9
    np.testing.assert_allclose(finer.seconds - base.seconds,
                               36 * 48 * gflop * SECONDS_PER_GFLOP, rtol=1e-9)


def test_the_sensitivity_readout_reads_exactly_the_plan_the_budget_prices(
        random_kernel_checkpoint, monkeypatch):
    from vidcorr.readout.pyramid import build_pyramid, read_out_plan

    rng = np.random.RandomState(3)
    a, b = rng.rand(75, 130, 3), rng.rand(75, 130, 3)
    for upsample in (1, 2):
        matcher = Matcher(random_kernel_checkpoint, levels=2, upsample=upsample,
                          readout="sensitivity", chunk=32, max_seconds=0, refine="none")
        seen = []
        real = matcher.readout._level

        def spy(img_a, img_b, fields, grid, *args):
            seen.append((img_a.shape[:2], len(grid)))
            return real(img_a, img_b, fields, grid, *args)

        monkeypatch.setattr(matcher.readout, "_level", spy)
        matcher.match(a, b, stride=8)
        matcher.close()
        plan = read_out_plan(75, 130, 2, 8, upsample)
        assert seen == [((lv.height, lv.width), lv.points) for lv in plan]
        # the pyramid's own images have the plan's sizes
        assert [p.shape[:2] for p in build_pyramid(a, 2)][::-1] == [
            (lv.height, lv.width) for lv in plan if lv.scale <= 1]
        est = budget.estimate(matcher.spec, 75, 130, 8, matcher.options)
        assert est.points == sum(lv.points for lv in plan)


def test_kernel_readout_is_priced_as_forward_passes():
    plan_sizes = [(259, 384), (129, 192), (64, 96)]
    kernel = MatchOptions(readout="kernel", refine="none", levels=3, passes=2)
    est = budget.estimate(SPEC, 259, 384, 8, kernel)
    seconds = sum(2 * plan_flops(layer_plan(SPEC, h, w), 9) / 1e9
                  * kernel_readout.SECONDS_PER_FORWARD_GFLOP for h, w in plan_sizes)
    assert est.seconds == pytest.approx(seconds)
    sensitivity = budget.estimate(SPEC, 259, 384, 8, _levels(3))
    assert est.seconds < sensitivity.seconds / 20  # a forward pass per level, not per point
    # the stride does not change the kernel read-out's time
    assert budget.estimate(SPEC, 259, 384, 1, kernel).seconds == pytest.approx(seconds)


def test_the_refinement_is_priced_per_pixel_and_sweep_at_the_finest_level():
    kernel = MatchOptions(readout="kernel", refine="none", levels=3, passes=2)
    refine = dict(refine="variational", refine_rounds=2, refine_iterations=3, refine_sweeps=4,
                  refine_scales=1)
    plain = budget.estimate(SPEC, 259, 384, 8, kernel)
    refined = budget.estimate(SPEC, 259, 384, 8, kernel.replace(**refine))
    assert refined.seconds - plain.seconds == pytest.approx(
        24 * 259 * 384 * budget.SECONDS_PER_REFINE_SWEEP)
    # at the finer read-out's size with upsample, and twice with the consistency pass
    finer = budget.estimate(SPEC, 259, 384, 8, kernel.replace(upsample=2, **refine), pairs=2)
    finer_plain = budget.estimate(SPEC, 259, 384, 8, kernel.replace(upsample=2), pairs=2)
    assert finer.seconds - finer_plain.seconds == pytest.approx(
        2 * 24 * 517 * 767 * budget.SECONDS_PER_REFINE_SWEEP)
    # each coarser scale costs a quarter of the one before: 1 + 1/4 + 1/16 with three
    coarse = budget.estimate(SPEC, 259, 384, 8, kernel.replace(**dict(refine, refine_scales=3)))
    assert coarse.seconds - plain.seconds == pytest.approx(
        1.3125 * 24 * 259 * 384 * budget.SECONDS_PER_REFINE_SWEEP)
    # check_budget prices the options' refinement: none costs nothing
    options = MatchOptions(readout="kernel", refine_scales=1)
    assert budget.check_budget(SPEC, 259, 384, 8, options).seconds == pytest.approx(
        budget.check_budget(SPEC, 259, 384, 8, options.replace(refine="none")).seconds +
        options.refine_rounds * options.refine_iterations * options.refine_sweeps * 259 * 384
        * budget.SECONDS_PER_REFINE_SWEEP)


def test_the_refinement_is_priced_by_its_sampler():
    """A spline sampler's refinement costs REFINE_SAMPLER_COST times bilinear's, and every
    sampler the options accept has a price."""
    assert set(budget.REFINE_SAMPLER_COST) == set(REFINE_SAMPLERS)
    assert budget.REFINE_SAMPLER_COST["bilinear"] == 1.0
    options = MatchOptions(readout="kernel", levels=3, passes=2)
    plain = budget.estimate(SPEC, 259, 384, 8, options.replace(refine="none")).seconds
    bilinear = budget.estimate(SPEC, 259, 384, 8, options).seconds - plain
    assert bilinear > 0
    for name in REFINE_SAMPLERS:
        priced = budget.estimate(SPEC, 259, 384, 8, options.replace(refine_sampler=name))
        assert priced.seconds - plain == pytest.approx(
            budget.REFINE_SAMPLER_COST[name] * bilinear)
