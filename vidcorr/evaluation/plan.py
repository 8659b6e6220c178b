"""What an evaluation scores: the models, their read-out variants, the pairs and the peers.

:class:`EvaluationPlan` is the one validated, frozen record behind ``vidcorr-evaluate``
(:func:`vidcorr.evaluation.evaluate.run_evaluation` takes it): which checkpoints (and
untrained networks) to score, with which variants of the read-out (each a row of the
report), on which pairs, beside which peers, at which grid and size. It loads without
TensorFlow; :meth:`EvaluationPlan.models` builds the matchers.
"""

import dataclasses
import os
from typing import Optional, Tuple

from vidcorr.errors import UserError
from vidcorr.evaluation import peers
from vidcorr.evaluation.groundtruth import EVAL_WIDTH
from vidcorr.readout.pyramid import DEFAULT_STRIDE

__all__ = ["EvaluationPlan", "BUILTIN_PAIRS"]

BUILTIN_PAIRS = ("motorcycle", "grove3")


@dataclasses.dataclass(frozen=True)
class EvaluationPlan:
    """What :func:`vidcorr.evaluation.evaluate.run_evaluation` scores.

    Attributes:
      checkpoints: run directories or prefixes, each optionally ``LABEL=PATH`` (none and
        no ``untrained``: the packaged default model).
      untrained: widths of untrained networks to score as well.
      builtin: names of built-in pairs.
      gt_pairs: ``(image1, image2, ground_truth)`` file triples.
      gt_kind: ``flow``/``disparity`` for ``gt_pairs`` (None: by file).
      gt_scale: disparity divisor.
      methods: peers to compare.
      stride: grid stride.
      width: the size protocol's width (0: full size).
      data_config: config file whose validation triplets score the middle frame
        (default: the first checkpoint's ``config.json``).
      interpolation: score the middle frame too.
      options: the :class:`vidcorr.readout.options.MatchOptions` every model's Matcher
        starts from (None: the defaults); the variants below vary it.
      levels: pyramid depths to score each model at (None: the Matcher's default);
        several give one row per depth.
      upsamples: the Matcher's finer read-outs (1: none); several give one row each.
      readouts: the Matcher's read-outs (None: its default); several give one row each.
      refines: the Matcher's refinements (None: its default); several give one row each.

    Raises:
      UserError: for a bad stride, width or untrained width.
    """
    checkpoints: Tuple[str, ...] = ()
    untrained: Tuple[float, ...] = ()
    builtin: Tuple[str, ...] = BUILTIN_PAIRS
    gt_pairs: Tuple[Tuple[str, str, str], ...] = ()
    gt_kind: Optional[str] = None
    gt_scale: Optional[float] = None
    methods: Tuple[str, ...] = peers.PEERS
    stride: int = DEFAULT_STRIDE
    width: int = EVAL_WIDTH
    data_config: Optional[str] = None
    interpolation: bool = True
    options: object = None
    levels: Tuple[Optional[int], ...] = (None,)
    upsamples: Tuple[int, ...] = (1,)
    readouts: Tuple[Optional[str], ...] = (None,)
    refines: Tuple[Optional[str], ...] = (None,)

    def __post_init__(self):
        for name in ("checkpoints", "untrained", "builtin", "gt_pairs", "methods", "levels",
                     "upsamples", "readouts", "refines"):
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))
        if self.stride < 1:
            raise UserError("stride must be >= 1, got %d" % self.stride)
        if self.gt_scale is not None and not (isinstance(self.gt_scale, (int, float)) and
                                              0 < self.gt_scale < float("inf")):
            raise UserError("gt_scale (the disparity divisor) must be a positive number, got %r"
                            % (self.gt_scale,))
        if self.width < 0:
            raise UserError("width must be 0 (full size) or positive, got %d" % self.width)
        for w in self.untrained:
            if not (isinstance(w, (int, float)) and w > 0):
                raise UserError("an untrained network's width must be positive, got %r" % (w,))

    def _variants(self, path, label):
        """``{label: Matcher}`` of one checkpoint, one per variant of the read-out: the label
        ends in the read-out's name, ``L<levels>``, ``x<upsample>``, ``refine <method>``
        where several are asked for."""
        from vidcorr.readout.matching import Matcher

        out = {}
        for r in self.readouts or (None,):
            for n in self.levels or (None,):
                for u in self.upsamples or (1,):
                    for f in self.refines or (None,):
                        kwargs = {key: value for key, value in (
                            ("upsample", u), ("levels", n), ("readout", r), ("refine", f))
                            if value is not None}
                        out[label + (" " + r if len(self.readouts) > 1 else "") +
                            (" L%d" % n if len(self.levels) > 1 else "") +
                            (" x%d" % u if len(self.upsamples) > 1 else "") +
                            (" refine %s" % f if len(self.refines) > 1 else "")] = Matcher(
                                path, self.options, **kwargs)
        return out

    def models(self, log=print):
        """The matchers to score.

        Returns:
          ``({label: Matcher}, {label: Matcher}, first)``: every model's variants, one per
          trained checkpoint (for its middle frames), and the first trained checkpoint's
          prefix (or None).

        Raises:
          UserError: for a missing checkpoint, or none given and none installed.
        """
        import tempfile
        from vidcorr.io import rundir
        from vidcorr.model.spec import ALL_SKIPS, NetworkSpec
        from vidcorr.readout.inference import save_initial_model
        from vidcorr.readout.matching import DEFAULT_MODEL

        checkpoints = list(self.checkpoints)
        models, predictors, first = {}, {}, None
        if not checkpoints and not self.untrained:
            if not os.path.isdir(DEFAULT_MODEL):
                raise UserError("no --checkpoint given and no default model is installed")
            checkpoints = ["default=" + DEFAULT_MODEL]
        for item in checkpoints:
            label, sep, path = item.partition("=")
            if not sep:
                label, path = os.path.basename(os.path.normpath(item)) or item, item
            found = self._variants(path, "vidcorr " + label)
            models.update(found)
            predictors["vidcorr " + label] = next(iter(found.values()))
            first = first or predictors["vidcorr " + label].checkpoint
        for width in self.untrained:
            folder = tempfile.mkdtemp(prefix="vidcorr-untrained-")
            prefix = save_initial_model(rundir.checkpoint_prefix(folder, 0),
                                        NetworkSpec(width=width, skips=ALL_SKIPS))
            models.update(self._variants(prefix, "vidcorr untrained w%g" % width))
            log("untrained network of width %g in %s" % (width, folder))
        return models, predictors, first
