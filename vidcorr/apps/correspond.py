"""Batch correspondence over image pairs: what ``scripts/correspond.py`` runs.

Every output file of a pair is written to a unique temporary name in its folder
and renamed when complete, so an error, an interrupt or a concurrent run writing
the same pair leaves no partial file behind.
"""

import os
import tempfile
import time

from tqdm import tqdm

from vidcorr.errors import UserError
from vidcorr.io.flowio import write_flo, write_kitti_flow
from vidcorr.io.video import to_rgb_float
from vidcorr.readout.matching import Matcher
from vidcorr.io.video import IMAGE_EXTENSIONS, load_frames, natural_key, resolve_source
from vidcorr.io.visualize import match_picture

__all__ = ["list_pairs", "correspond_pairs", "write_outputs", "check_out_dir", "OUTPUT_SUFFIXES",
           "parse_shard", "shard_pairs", "finished"]


def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


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
        return [("%s__%s" % (_stem(images[0]), _stem(images[1])), images[0], images[1])]
    if video:
        frames = load_frames(video)
        if start < 0 or count < 1 or start + count - 1 + gap >= len(frames):
            raise UserError("%s has %d frames: --start %d --count %d --gap %d do not fit"
                            % (video, len(frames), start, count, gap))
        stem = _stem(resolve_source(video))
        return [("%s_%05d__%05d" % (stem, i, i + gap), frames[i], frames[i + gap])
                for i in range(start, start + count)]
    if pairs_file:
        if not os.path.isfile(pairs_file):
            raise UserError("pairs file not found: %s" % pairs_file)
        out, base = [], os.path.dirname(os.path.abspath(pairs_file))
        with open(pairs_file) as f:
            for number, line in enumerate(f, 1):
                parts = line.split()
                if not parts or parts[0].startswith("#"):
                    continue
                if len(parts) != 2:
                    raise UserError("%s:%d: expected two paths, got %r"
                                    % (pairs_file, number, line.strip()))
                a, b = (p if os.path.isabs(p) else os.path.join(base, p) for p in parts)
                out.append(("%s__%s" % (_stem(a), _stem(b)), a, b))
        if not out:
            raise UserError("%s lists no pairs" % pairs_file)
        return out
    if not os.path.isdir(frames_dir):
        raise UserError("frame folder not found: %s" % frames_dir)
    names = sorted((n for n in os.listdir(frames_dir) if n.lower().endswith(IMAGE_EXTENSIONS)),
                   key=natural_key)
    if len(names) <= gap:
        raise UserError("%s has %d frames, too few for gap %d" % (frames_dir, len(names), gap))
    return [("%s__%s" % (_stem(names[i]), _stem(names[i + gap])),
             os.path.join(frames_dir, names[i]), os.path.join(frames_dir, names[i + gap]))
            for i in range(len(names) - gap)]


def _atomic(path, writer):
    """Runs ``writer(tmp)`` on a unique temporary name beside ``path``, then renames it.

    Concurrent runs writing the same file each get their own temporary file; the
    last rename wins, and every reader sees a complete file.
    """
    folder, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix="." + name + ".", suffix=".part", dir=folder or ".")
    os.close(fd)
    try:
        writer(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


OUTPUT_SUFFIXES = (".npz", ".txt", ".flo", "_kitti.png", ".png")


def check_out_dir(out_dir, names=()):
    """Checks before any work that ``out_dir`` can take the outputs of ``names``.

    Creates ``out_dir`` if needed (the caller removes it again if nothing is written).

    Raises:
      UserError: if ``out_dir`` is a file, cannot be created or written, or an
        output path of a pair is an existing folder.
    """
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UserError("--out %s exists and is not a folder" % out_dir)
    try:  # the real test: create the folder and a file in it (permissions, read-only mounts)
        os.makedirs(out_dir, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=out_dir)
        os.close(fd)
        os.remove(probe)
    except OSError as err:
        raise UserError("--out %s cannot be written: %s" % (out_dir, err.strerror or err))
    for name in names:
        for suffix in OUTPUT_SUFFIXES:
            path = os.path.join(out_dir, name + suffix)
            if os.path.isdir(path):
                raise UserError("cannot write %s: it is a folder" % path)


def write_outputs(matches, frame_t, frame_t2, out_dir, name):
    """Writes NAME.npz, NAME.txt, NAME.flo, NAME_kitti.png and NAME.png; returns the paths."""
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
    for path, writer in writers:
        _atomic(path, writer)
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


def correspond_pairs(pairs, out_dir, checkpoint=None, options=None, stride=4,
                     consistency=False, progress=True, shard=None, overwrite=False, log=None,
                     devices=None):
    """Matches every ``(name, frame_t, frame_t2)`` and writes its files.

    ``options`` (a :class:`vidcorr.readout.options.MatchOptions`) say how each pair is
    read out, its time limit included (checked before the pair's work starts). With
    ``shard=(K, N)`` only that shard's pairs are matched (:func:`shard_pairs`); pairs
    whose outputs all exist are skipped unless ``overwrite``. ``devices`` spreads each
    read-out over devices (see the :class:`vidcorr.readout.matching.Matcher`).

    Returns:
      ``[(name, number of valid matches, seconds)]``.

    Raises:
      UserError: for a bad checkpoint, unreadable or mismatched images, or an
        output folder that cannot take the files (checked before any work).
    """
    if shard is not None:
        pairs = shard_pairs(pairs, shard)
    if not overwrite and os.path.isdir(out_dir):
        todo = [p for p in pairs if not finished(out_dir, p[0])]
        if len(todo) < len(pairs) and log is not None:
            log("skipping %d of %d pairs whose outputs are all in %s (--overwrite to redo)"
                % (len(pairs) - len(todo), len(pairs), out_dir))
        pairs = todo
    if not pairs:
        return []
    created = not os.path.isdir(out_dir)  # removed again if it stays empty
    check_out_dir(out_dir, [name for name, _, _ in pairs])
    matcher, done = None, []
    try:
        matcher = Matcher(checkpoint, options, devices=devices)
        for name, frame_t, frame_t2 in tqdm(pairs, disable=not progress or len(pairs) < 2,
                                            unit="pair"):
            start = time.time()
            a, b = to_rgb_float(frame_t, "frame_t"), to_rgb_float(frame_t2, "frame_t2")
            matches = matcher.match(a, b, stride=stride, consistency=consistency,
                                    progress=progress)
            write_outputs(matches, a, b, out_dir, name)
            done.append((name, int(matches.valid.sum()), time.time() - start))
    finally:
        if matcher is not None:
            matcher.close()
        if created and os.path.isdir(out_dir) and not os.listdir(out_dir):
            os.rmdir(out_dir)
    return done
