"""Read-outs behind one interface, found by name: what turns a pair into matches.

A read-out is a class with the small interface of :class:`ReadOut`: whether it
works with a network (:meth:`~ReadOut.refusal`), what a pyramid level costs
(:meth:`~ReadOut.level_cost`, for :mod:`vidcorr.readout.budget`), and, bound to a
:class:`vidcorr.Matcher`, the positions, peaks and confidences of a grid's points
in a batch of pairs (:meth:`~ReadOut.read_out`). :class:`vidcorr.Matcher`, the
budget, ``evaluate.py`` and the command-line programs find it by name here and
never test the name themselves.

Two are built in: ``kernel`` (:mod:`vidcorr.readout.kernel`, the blend weights,
the whole match in one graph) and ``sensitivity`` (:mod:`vidcorr.readout.sensitivity`,
the exact read-out of the paper). :func:`register` adds another; ``"auto"`` picks
the first registered read-out, in order, that works with the network.

This module loads without TensorFlow (the options and the CLI's ``--help`` use it);
a built-in read-out's module is imported when it is first asked for.
"""

import abc
import importlib

from vidcorr.errors import UserError

__all__ = ["ReadOut", "register", "unregister", "get", "names", "resolve", "AUTO"]

AUTO = "auto"
_BUILT_IN = {"kernel": "vidcorr.readout.kernel.readout:KernelReadOut",
             "sensitivity": "vidcorr.readout.sensitivity.readout:SensitivityReadOut"}
_REGISTERED = dict(_BUILT_IN)  # name -> class, or "module:class" until first asked for


class ReadOut(abc.ABC):
    """The interface of a read-out (subclass it, define the two abstract methods and
    :func:`register` the class; a subclass without them cannot be made).

    An instance serves one :class:`vidcorr.Matcher` (``matcher``: its ``spec``,
    ``weights``, ``options``, ``device``, ``threads``, ``devices`` and
    ``built(cache, key, build)``, which times what it builds) and caches what it
    builds per image size.
    """

    name = None  # set by register()

    def __init__(self, matcher):
        self.matcher = matcher

    @classmethod
    def refusal(cls, spec):
        """Why this read-out cannot work with a network (a one-line reason), or None."""
        return None

    @classmethod
    @abc.abstractmethod
    def level_cost(cls, spec, level, options):
        """``(seconds, peak_mb)`` of reading one pyramid level for one pair.

        Args:
          spec: the network's :class:`vidcorr.model.spec.NetworkSpec`.
          level: a :class:`vidcorr.readout.pyramid.Level` of the read-out's plan.
          options: the :class:`vidcorr.readout.options.MatchOptions`.
        """

    @abc.abstractmethod
    def read_out(self, pairs, points, stride, progress=False, desc="pixels"):
        """Matches of ``points`` in each pair.

        Args:
          pairs: a list of ``(frame_t, frame_t2)``, ``[H, W, 3]`` float arrays of one size.
          points: ``[N, 2]`` int ``(x, y)`` grid points of the middle frame.
          stride: their spacing (a coarse level's grid follows it,
            :func:`vidcorr.readout.pyramid.read_out_plan`).
          progress: show progress.
          desc: the progress bar's label.

        Returns:
          ``(position [P, N, 2, 2], peak [P, N, 2], confidence [P, N])`` for the P pairs:
          each point's ``(x, y)`` in frame t and frame t+2, the read-out's peak per frame,
          and the match's confidence in [0, 1].
        """

    def close(self):
        """Releases what the read-out built."""


def register(name, cls):
    """Makes ``cls`` (a :class:`ReadOut` subclass) the read-out called ``name``.

    Raises:
      UserError: for a name that is taken or reserved, or a class that is no read-out or
        lacks a method of the interface.
    """
    if not isinstance(name, str) or not name or name == AUTO or name in _REGISTERED:
        raise UserError("cannot register a read-out called %r: the name is taken or "
                        "reserved" % (name,))
    if not (isinstance(cls, type) and issubclass(cls, ReadOut)):
        raise UserError("a read-out must be a subclass of vidcorr.readout.registry.ReadOut")
    if cls.__abstractmethods__:
        raise UserError("read-out %r must define %s" % (name, ", ".join(
            sorted(cls.__abstractmethods__))))
    cls.name = name
    _REGISTERED[name] = cls


def unregister(name):
    """Removes a read-out added by :func:`register` (the built-in ones stay)."""
    if name not in _BUILT_IN:
        _REGISTERED.pop(name, None)


def names():
    """``"auto"`` and every read-out's name, the built-in ones first."""
    return (AUTO,) + tuple(_REGISTERED)


def get(name):
    """The read-out class called ``name``.

    Raises:
      UserError: for an unknown name.
    """
    if name not in _REGISTERED:
        raise UserError("readout must be one of %s, got %r" % (", ".join(names()), name))
    cls = _REGISTERED[name]
    if isinstance(cls, str):
        module, attr = cls.split(":")
        cls = getattr(importlib.import_module(module), attr)
        cls.name = name
        _REGISTERED[name] = cls
    return cls


def resolve(name, spec):
    """The read-out class for ``name`` with a network: ``"auto"`` picks the first that works.

    Raises:
      UserError: for an unknown name or a read-out that refuses the network (its reason).
    """
    if name == AUTO:
        for candidate in _REGISTERED:
            if get(candidate).refusal(spec) is None:
                return get(candidate)
    cls = get(name)
    reason = cls.refusal(spec)
    if reason:
        raise UserError("readout %r %s" % (name, reason))
    return cls
