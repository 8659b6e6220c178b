"""MatchOptions (vidcorr.readout.options): bad values are one-line errors."""

import os
import numpy as np
import pytest
from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.readout.inference import find_model, fold_batch_norm
from vidcorr.readout.kernel.graph import LevelGraph as _Level
from vidcorr.readout.matching import DEFAULT_MODEL, Matcher
K = 5  # the random kernel checkpoint's kernel size (tests/conftest.py)


def test_bad_readout_options_are_one_line_errors(random_kernel_checkpoint):
    for kwargs, message in (({"readout": "blend"}, "readout must be one of auto, kernel, sensitivity"),
                            ({"statistic": "mean"}, "statistic must be one of"),
                            ({"temperature": 0}, "temperature must be from 0.1 to 10"),
                            ({"temperature": 1e-30}, "temperature must be from 0.1 to 10"),
                            ({"smooth": -1}, "smooth must be an integer >= 0"),
                            ({"passes": 0}, "passes must be an integer >= 1"),
                            ({"sigma": -1}, "sigma must be a finite number >= 0"),
                            ({"sigma_range": -0.5}, "sigma_range must be a finite number >= 0"),
                            ({"range_floor": float("nan")},
                             "range_floor must be a finite number >= 0")):
        with pytest.raises(UserError, match=message) as err:
            Matcher(random_kernel_checkpoint, **kwargs)
        assert "\n" not in str(err.value)
