"""The developers' pairs (384 columns, stride 8, the packaged model, no peers) with the
kernel read-out's ``sigma`` set to each value given, one evaluation per value:

    python research/adaptation/sigma_eval.py 10 5 3 0   # writes sigma_S.md/.json/.png here
"""
import os
import sys

from vidcorr.evaluation.evaluate import run_evaluation
from vidcorr.evaluation.plan import EvaluationPlan
from vidcorr.readout.options import MatchOptions

DEFAULT_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "vidcorr",
                             "models", "default")
for s in [float(v) for v in sys.argv[1:]]:
    plan = EvaluationPlan(checkpoints=["default=" + DEFAULT_MODEL], methods=[],
                          stride=8, interpolation=False, options=MatchOptions(sigma=s))
    run_evaluation(plan, out="sigma_%g" % s, progress=False)
    print("sigma", s)
