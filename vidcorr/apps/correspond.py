"""Batch correspondence over image pairs: what ``scripts/correspond.py`` runs.

* Pairs come from two images, a list file, a folder of frames or a video
  (:func:`list_pairs`). Each pair's outputs are named ``<frame t>__<frame t+2>``
  after the file stems; where two pairs of a run would get one name, the
  shortest distinguishing parent folders (then the extensions) are added, so
  no run overwrites its own outputs and a rerun finds them again.
* A pair whose images are missing, unreadable or of different sizes is
  skipped with its reason (and the list file's line); the others are matched,
  and the caller gets the failures to report (the CLI exits non-zero). Images and
  arguments are checked before the network is loaded: TensorFlow is imported and
  the checkpoint read only once a pair is ready to match, so bad input fails fast.
* A pair's five files are written to temporary names first and renamed into
  place only when all five are complete, the ``.npz`` last: an error, an interrupt,
  a full disk or a concurrent run writing the same pair leaves all of a pair's files
  or none, and a ``kill -9`` between the renames leaves a pair without its ``.npz``,
  which a reader can tell is incomplete (and a rerun redoes). A run removes the
  ``.part`` files that killed runs left in its folder.
"""

import collections
import hashlib
import os
import time

from tqdm import tqdm

from vidcorr.errors import UserError
from vidcorr.io.files import (atomic_path, check_writable_folder, remove_empty_folders,
                              remove_stale_parts)
from vidcorr.io.flowio import write_flo, write_kitti_flow
from vidcorr.io.video import frame_names, load_frames, resolve_source
from vidcorr.io.visualize import match_picture
from vidcorr.readout.pyramid import DEFAULT_STRIDE, grid_points, read_pair

__all__ = ["Pair", "Result", "list_pairs", "unique_names", "correspond_pairs", "write_outputs",
           "check_out_dir", "OUTPUT_SUFFIXES", "parse_shard", "shard_pairs", "finished"]

Pair = collections.namedtuple("Pair", ["name", "frame_t", "frame_t2", "origin"])
Pair.__new__.__defaults__ = (None,)
Pair.__doc__ = """One pair to match: output ``name``, the two frames (paths or uint8
arrays) and ``origin`` (``LIST:line`` for a list file's pair, else None)."""


def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def _parts(path):
    """A file's name parts, nearest first: ``[stem, extension, parent, grandparent, ...]``."""
    parts = [p for p in os.path.abspath(path).split(os.sep) if p]
    stem, ext = os.path.splitext(parts[-1])
    return [stem, ext.lstrip(".")] + parts[-2::-1]


def _part(path, index):
    parts = _parts(path)
    return parts[index] if index < len(parts) else ""


def _label(path, keys):
    """A file's label from its name parts ``keys`` (indices of :func:`_parts`): the folders
    outermost first, the stem, the extension, joined by ``_``."""
    parts = _parts(path)
    folders = [parts[i] for i in sorted(keys, reverse=True) if 2 <= i < len(parts)]
    ext = ["" if 1 not in keys else parts[1]]
    return "_".join([p for p in folders + [parts[0]] + ext if p])


def _short(name, pair):
    """``name``, or where it is too long for a file name with its suffixes, its start and a
    digest of the pair's paths."""
    if len(name.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES:
        return name
    digest = hashlib.sha1(repr((_identity(pair.frame_t), _identity(pair.frame_t2))).encode(
        "utf-8", "surrogateescape")).hexdigest()[:12]
    return name.encode("utf-8", "surrogateescape")[:MAX_NAME_BYTES - 13].decode(
        "utf-8", "ignore") + "_" + digest


def _identity(frame):
    return os.path.abspath(frame) if isinstance(frame, str) else id(frame)


def unique_names(pairs):
    """The pairs with names unique within the list: ``stem1__stem2``, and where those
    collide, the name parts that tell the colliding pairs apart, nearest first: the
    extensions (``f1_jpg__f2_jpg``), then the nearest parent folder in which their paths
    differ (``x_f0__x_f2``), never the folders they share. Names too long for a file
    get a digest of their paths. Arrays' pairs keep their names.
    """
    keys = [{0} for _ in pairs]
    paths = [isinstance(p.frame_t, str) and isinstance(p.frame_t2, str) for p in pairs]
    names = [p.name for p in pairs]
    while True:
        groups = collections.defaultdict(list)
        for i, name in enumerate(names):
            groups[name].append(i)
        # A clash: one name for different files (the same pair listed twice is one pair).
        clashes = [[i for i in g if paths[i]] for g in groups.values()
                   if any(paths[i] for i in g) and len(set(
                       (_identity(pairs[i].frame_t), _identity(pairs[i].frame_t2))
                       for i in g)) > 1]
        moved = False
        for group in clashes:
            depth = max(len(_parts(f)) for i in group for f in pairs[i][1:3])
            for index in range(1, depth):  # the nearest part in which the group's paths differ
                if any(index in keys[i] for i in group):
                    continue
                if len(set((_part(pairs[i].frame_t, index), _part(pairs[i].frame_t2, index))
                           for i in group)) > 1:
                    for i in group:
                        keys[i].add(index)
                        names[i] = "%s__%s" % (_label(pairs[i].frame_t, keys[i]),
                                               _label(pairs[i].frame_t2, keys[i]))
                    moved = True
                    break
        if not moved:  # no clash left, or paths that differ only in spelling
            return [p._replace(name=_short(n, p)) for p, n in zip(pairs, names)]


def _read_list(pairs_file):
    """The ``(line number, [path, path])`` entries of a list file.

    Raises:
      UserError: for a file that is not text, or a line without two paths.
    """
    if not os.path.isfile(pairs_file):
        raise UserError("pairs file not found: %s" % pairs_file)
    try:
        with open(pairs_file, encoding="utf-8-sig") as f:  # -sig: a byte-order mark is not a path
            lines = f.read().splitlines()
    except UnicodeDecodeError as err:
        raise UserError("%s is not a UTF-8 text file (byte %d): give one 'frame_t frame_t2' "
                        "pair per line" % (pairs_file, err.start))
    if any("\0" in line for line in lines):
        raise UserError("%s is not a text file: give one 'frame_t frame_t2' pair per line"
                        % pairs_file)
    out = []
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) != 2:
            raise UserError("%s:%d: expected two paths, got %r"
                            % (pairs_file, number, line.strip()))
        out.append((number, parts))
    return out


def list_pairs(images=(), pairs_file=None, frames_dir=None, gap=2, video=None, start=0,
               count=1):
    """The ``(name, frame_t, frame_t2)`` pairs from exactly one kind of input.

    Args:
      images: two image paths.
      pairs_file: a text file with one ``frame_t frame_t2`` pair per line.
      frames_dir: a folder of frames; pairs ``(i, i + gap)``.
      gap: the frame gap for ``frames_dir`` and ``video``.
      video: a video file (or ``pkg:`` path); pairs ``(start + k, start + k + gap)``.
      start: first frame index for ``video``.
      count: number of pairs from ``video``.

    Returns:
      A list of ``(name, frame_t, frame_t2)``; frames are paths or uint8 arrays.

    Raises:
      UserError: for no or several inputs, a bad list file or too few frames.
    """
    given = sum([bool(images), bool(pairs_file), bool(frames_dir), bool(video)])
    if given != 1:
        raise UserError("give two images, or --pairs LIST, or --frames DIR, or --video FILE "
                        "(exactly one)")
    if gap < 1:
        raise UserError("--gap must be at least 1, got %d" % gap)
    if images:
        if len(images) != 2:
            raise UserError("give exactly two images (frame t and frame t+2), got %d"
                            % len(images))
        a, b = (os.fspath(p) for p in images)
        return unique_names([Pair("%s__%s" % (_stem(a), _stem(b)), a, b)])
    if video:
        frames = load_frames(video)
        if start < 0 or count < 1 or start + count - 1 + gap >= len(frames):
            raise UserError("%s has %d frames: --start %d --count %d --gap %d do not fit"
                            % (video, len(frames), start, count, gap))
        stem = _stem(resolve_source(video))
        return [Pair("%s_%05d__%05d" % (stem, i, i + gap), frames[i], frames[i + gap])
                for i in range(start, start + count)]
    if pairs_file:
        out, seen, base = [], set(), os.path.dirname(os.path.abspath(pairs_file))
        for number, parts in _read_list(pairs_file):
            a, b = (p if os.path.isabs(p) else os.path.join(base, p) for p in parts)
            if (_identity(a), _identity(b)) in seen:  # a pair listed again is matched once
                continue
            seen.add((_identity(a), _identity(b)))
            out.append(Pair("%s__%s" % (_stem(a), _stem(b)), a, b,
                            "%s:%d" % (pairs_file, number)))
        if not out:
            raise UserError("%s lists no pairs" % pairs_file)
        return unique_names(out)
    if not os.path.isdir(frames_dir):
        raise UserError("frame folder not found: %s" % frames_dir)
    names = frame_names(frames_dir)
    if len(names) <= gap:
        raise UserError("%s has %d frames, too few for gap %d" % (frames_dir, len(names), gap))
    return unique_names([Pair("%s__%s" % (_stem(names[i]), _stem(names[i + gap])),
                              os.path.join(frames_dir, names[i]),
                              os.path.join(frames_dir, names[i + gap]))
                         for i in range(len(names) - gap)])


OUTPUT_SUFFIXES = (".npz", ".txt", ".flo", "_kitti.png", ".png")
MAX_NAME_BYTES = 200  # a pair's name; with a suffix and a .part's, within 255 bytes


def check_out_dir(out_dir, names=()):
    """Checks before any work that ``out_dir`` can take the outputs of ``names``.

    Creates ``out_dir`` if needed (the caller removes it again if nothing is written).

    Returns:
      The folders created here, outermost first
      (:func:`vidcorr.io.files.remove_empty_folders`).

    Raises:
      UserError: if ``out_dir`` is a file, cannot be created or written, or an
        output path of a pair is an existing folder.
    """
    created = check_writable_folder(out_dir, "--out")
    for name in names:
        for suffix in OUTPUT_SUFFIXES:
            path = os.path.join(out_dir, name + suffix)
            if os.path.isdir(path):
                raise UserError("cannot write %s: it is a folder" % path)
    return created


def write_outputs(matches, frame_t, frame_t2, out_dir, name):
    """Writes NAME.npz, NAME.txt, NAME.flo, NAME_kitti.png and NAME.png; returns the paths.

    All five are written to temporary names, then renamed into place, the ``.npz``
    last (a pair is complete when its ``.npz`` is there): a failure (a full disk, say)
    leaves none of them new.

    Raises:
      UserError: if a file cannot be written, naming it and the reason.
    """
    flow = matches.to_flow()
    base = os.path.join(out_dir, name)

    def save_npz(path):
        with open(path, "wb") as f:  # a file object: numpy adds no second extension
            matches.save(f)

    writers = [
        (base + ".npz", save_npz),
        (base + ".txt", matches.save_text),
        (base + ".flo", lambda p: write_flo(p, flow)),
        (base + "_kitti.png", lambda p: write_kitti_flow(p, flow)),
        (base + ".png", lambda p: match_picture(frame_t, frame_t2, matches, p)),
    ]
    os.makedirs(out_dir, exist_ok=True)

    def write_from(i):  # nested: each file is renamed only once all are complete
        if i == len(writers):
            return
        path, writer = writers[i]
        with atomic_path(path) as tmp:
            writer(tmp)
            write_from(i + 1)

    write_from(0)
    return [p for p, _ in writers]


def parse_shard(text):
    """``"K/N"`` as ``(K, N)`` with ``1 <= K <= N``.

    Raises:
      UserError: for anything else.
    """
    try:
        k, n = (int(v) for v in text.split("/"))
    except (ValueError, AttributeError):
        raise UserError("--shard must look like K/N (e.g. 2/4), got %r" % (text,))
    if not 1 <= k <= n:
        raise UserError("--shard K/N needs 1 <= K <= N, got %s" % text)
    return k, n


def shard_pairs(pairs, shard):
    """The pairs of shard ``(K, N)``: every N-th, from the K-th (1-based).

    The N shards of a list are disjoint and together hold every pair once.
    """
    k, n = shard
    return [p for i, p in enumerate(pairs) if i % n == k - 1]


def finished(out_dir, name):
    """Whether every output file of a pair exists (each is renamed into place complete)."""
    return all(os.path.isfile(os.path.join(out_dir, name + x)) for x in OUTPUT_SUFFIXES)


Result = collections.namedtuple("Result", ["name", "valid", "seconds", "error", "origin"])
Result.__doc__ = """One pair's outcome: its name, the number of valid matches and the
seconds it took, or (``valid`` None) the ``error`` that made it skip, with the pair's
``origin`` in a list file."""


def _default_matcher():
    from vidcorr.readout.matching import Matcher
    return Matcher()


def _write_or_stop(matches, frame_t, frame_t2, out_dir, name, done):
    """:func:`write_outputs`; where it fails (a full disk: the next pairs would fail the same
    way) the error names the pairs of ``done`` (:class:`Result`) this run finished."""
    try:
        write_outputs(matches, frame_t, frame_t2, out_dir, name)
    except UserError as err:
        written = [r.name for r in done if r.error is None]
        raise UserError("%s; %s" % (err, "%d pair(s) of this run finished before it: %s%s" % (
            len(written), ", ".join(written[:5]), " ..." if len(written) > 5 else "")
            if written else "no pair of this run was finished"))


def correspond_pairs(pairs, out_dir, matcher=None, stride=DEFAULT_STRIDE, consistency=False,
                     progress=True, overwrite=False, log=None):
    """Matches every :class:`Pair` (or ``(name, frame_t, frame_t2)``) and writes its files.

    ``matcher`` is a :class:`vidcorr.readout.matching.Matcher` (the caller closes it), or a
    function returning one, called once the first pair's images are read (so bad images
    are found before TensorFlow loads; closed here), or None: the default model with the
    default options. Its options say how each pair is read out, its time limit included
    (checked before the pair's work starts). Pairs whose outputs all exist are skipped
    unless ``overwrite``; to match one shard of the pairs, pass :func:`shard_pairs`'s.

    A pair that cannot be matched (missing or unreadable images, sizes that
    differ, over the time limit) is skipped with its reason and the others go on;
    a failure to write stops the run (the next pairs would fail the same way).

    Returns:
      A list of :class:`Result`, one per pair tried, in order.

    Raises:
      UserError: for a bad stride or an output folder that cannot take the files
        (checked before any work), a bad checkpoint (checked when the first pair's
        images have been read), or a failed write.
    """
    grid_points(1, 1, stride)  # a bad stride fails before any work
    pairs = [p if isinstance(p, Pair) else Pair(*p) for p in pairs]
    if not overwrite and os.path.isdir(out_dir):
        todo = [p for p in pairs if not finished(out_dir, p.name)]
        if len(todo) < len(pairs) and log is not None:
            log("skipping %d of %d pairs whose outputs are all in %s (--overwrite to redo)"
                % (len(pairs) - len(todo), len(pairs), out_dir))
        pairs = todo
    if not pairs:
        return []
    created = check_out_dir(out_dir, [p.name for p in pairs])  # removed again if left empty
    remove_stale_parts(out_dir)  # what a killed run into this folder left
    done = []
    build = None if hasattr(matcher, "match") else (matcher or _default_matcher)
    if build is not None:  # built once the first pair is read, and closed here
        matcher = None

    def skip(pair, start, err):
        done.append(Result(pair.name, None, time.time() - start, str(err), pair.origin))
        if log is not None and len(pairs) > 1:
            log("skipped %s%s: %s" % (pair.name, " (%s)" % pair.origin if pair.origin else "",
                                      err))

    try:
        for pair in tqdm(pairs, disable=not progress or len(pairs) < 2, unit="pair"):
            start = time.time()
            try:
                a, b = read_pair(pair.frame_t, pair.frame_t2)
            except UserError as err:
                skip(pair, start, err)
                continue
            if matcher is None:  # TensorFlow and the checkpoint, once a pair is ready
                matcher = build()
                start = time.time()
            try:
                matches = matcher.match(a, b, stride=stride, consistency=consistency,
                                        progress=progress)
            except UserError as err:
                skip(pair, start, err)
                continue
            _write_or_stop(matches, a, b, out_dir, pair.name, done)
            done.append(Result(pair.name, int(matches.valid.sum()), time.time() - start, None,
                               pair.origin))
    finally:
        if build is not None and matcher is not None:
            matcher.close()
        remove_empty_folders(created)
    return done
