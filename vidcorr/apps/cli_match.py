"""The matcher's command-line flags: added to a parser, read back as a validated
:class:`vidcorr.readout.options.MatchOptions` (``vidcorr-correspond``), so a bad value is a
usage error naming its flag."""

from vidcorr.errors import UserError
from vidcorr.readout import registry
from vidcorr.readout.budget import DEFAULT_MAX_SECONDS
from vidcorr.readout.confidence import DEFAULT_MIN_CONFIDENCE
from vidcorr.readout.options import (DEFAULT_MEMORY_MB, DEFAULT_READOUT, DEFAULT_REFINE,
                                     DEFAULT_REFINE_SAMPLER, REFINE_METHODS, REFINE_SAMPLERS,
                                     MatchOptions)
from vidcorr.readout.pyramid import UPSAMPLES

__all__ = ["add_match_arguments", "match_options", "MATCH_FLAGS"]

# the MatchOptions fields that add_match_arguments gives flags (``--max-size`` ...)
MATCH_FLAGS = ("max_size", "levels", "upsample", "readout", "refine", "refine_sampler",
               "memory_mb", "min_confidence", "max_seconds")


def add_match_arguments(parser):
    """Adds a flag for each of :data:`MATCH_FLAGS` to an ``argparse`` parser."""
    parser.add_argument("--max-size", type=int, help="downscale pairs whose longer side exceeds "
                                                     "this; matches are mapped back")
    parser.add_argument("--levels", type=int,
                        help="pyramid levels of the coarse-to-fine read-out; 1 reads out at "
                             "full size only (default: by the size, 3 up to 384 pixels and "
                             "one more each time the longer side doubles)")
    parser.add_argument("--upsample", type=int, default=1, choices=UPSAMPLES,
                        help="also read out at 2 or 4 times the size after the finest level: "
                             "sub-pixel motion, 3-4x the time with 2 (default 1: none)")
    parser.add_argument("--readout", choices=registry.names(), default=DEFAULT_READOUT,
                        help="kernel: the kernel head's blend weights, one forward pass per "
                             "level for every pixel; sensitivity: the exact read-out, a "
                             "backward pass per grid point; auto (the default): kernel where "
                             "the network has a kernel head")
    parser.add_argument("--refine", choices=REFINE_METHODS, default=DEFAULT_REFINE,
                        help="variational (the default): refine the finest level's matches on "
                             "the frames, to a fraction of a pixel; none: the read-out's own")
    parser.add_argument("--refine-sampler", choices=REFINE_SAMPLERS,
                        default=DEFAULT_REFINE_SAMPLER,
                        help="how the refinement reads the frames: bilinear (the default), "
                             "bspline (nearly free of bilinear's bias of a few hundredths of "
                             "a pixel, a little smoother; tracking's default) or spline")
    parser.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB,
                        help="memory budget of a batched backward pass")
    parser.add_argument("--min-confidence", type=float, default=DEFAULT_MIN_CONFIDENCE,
                        help="mark matches below this confidence invalid (peak ratio times "
                             "texture; default %(default)s)")
    parser.add_argument("--max-seconds", type=float, default=DEFAULT_MAX_SECONDS,
                        help="refuse pairs estimated to take longer (0: no limit; default "
                             "%(default)s)")


def match_options(parser, args, names=MATCH_FLAGS):
    """The :class:`vidcorr.readout.options.MatchOptions` of the flags ``names``; a bad value
    is a usage error naming its flag (exit 2)."""
    try:
        return MatchOptions(**{n: getattr(args, n) for n in names})
    except UserError as err:
        message = str(err)
        for name in names:
            if message.startswith(name + " "):
                message = "--" + name.replace("_", "-") + message[len(name):]
        parser.error(message)
