"""What an evaluation scores (vidcorr.evaluation.plan): checked values, one model per variant."""

import pytest

from vidcorr.errors import UserError
from vidcorr.evaluation.plan import EvaluationPlan


@pytest.mark.parametrize("fields,match", [
    ({"stride": 0}, "stride must be >= 1"), ({"width": -1}, "width must be 0"),
    ({"untrained": [0]}, "untrained network's width"),
    ({"untrained": ["wide"]}, "untrained network's width"),
    ({"gt_scale": -1.0}, "gt_scale .* must be a positive number, got -1.0"),
    ({"gt_scale": 0.0}, "gt_scale .* must be a positive number, got 0.0"),
])
def test_bad_plans_are_one_line_errors(fields, match):
    with pytest.raises(UserError, match=match):
        EvaluationPlan(**fields)


def test_lists_become_tuples_and_the_plan_is_frozen():
    plan = EvaluationPlan(checkpoints=["a"], methods=["dis"], levels=[1, 3])
    assert plan.checkpoints == ("a",) and plan.methods == ("dis",) and plan.levels == (1, 3)
    with pytest.raises(Exception):
        plan.stride = 2


def test_one_matcher_per_variant_with_its_settings(random_kernel_checkpoint):
    plan = EvaluationPlan(checkpoints=["k=" + random_kernel_checkpoint],
                          readouts=("kernel", "sensitivity"), refines=("none", "variational"))
    models, predictors, first = plan.models(log=lambda *a: None)
    try:
        assert sorted(models) == sorted(
            "vidcorr k %s refine %s" % (r, f) for r in ("kernel", "sensitivity")
            for f in ("none", "variational"))
        for label, matcher in models.items():
            readout, _, refine = label.split()[2:]
            assert (matcher.options.readout, matcher.options.refine) == (readout, refine)
        assert list(predictors) == ["vidcorr k"] and first.startswith(random_kernel_checkpoint)
    finally:
        for matcher in models.values():
            matcher.close()
